"""Attacks written as a PR's own tests, shared by the sandbox tests and the hardening run through the App.

Each asserts that its defence held, so a contained attack is a passing test.
"""

FORK_BOMB_TEST = '''
import os, signal, time


def test_fork_bomb_hits_the_pid_limit():
    children = []
    try:
        for _ in range(600):
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    finally:
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        for pid in children:
            os.waitpid(pid, 0)
    assert 0 < len(children) < 256
'''
