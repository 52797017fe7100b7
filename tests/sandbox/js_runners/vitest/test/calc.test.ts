import { describe, expect, it } from 'vitest';
import { add } from '../src/calc';

describe('calc', () => {
  it('adds', () => {
    expect(add(2, 3)).toBe(5);
  });
});
