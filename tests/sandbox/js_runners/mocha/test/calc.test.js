'use strict';
const assert = require('node:assert');
const { add } = require('../src/calc');

const expect = (value) => ({ toBe: (wanted) => assert.strictEqual(value, wanted) });

describe('calc', () => {
  it('adds', () => {
    expect(add(2, 3)).toBe(5);
  });
});
