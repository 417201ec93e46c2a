"""Removing whatever a program left in its directory, however deep, wide or locked it is.

shutil.rmtree recurses (a tree deeper than the recursion limit raises RecursionError) and
follows paths (a path longer than PATH_MAX fails). Here a directory's subdirectories are moved
up into the top directory before it is removed, so the tree never has to be walked in depth:
two open descriptors at any time, no recursion, no long paths. Permissions the program took
away (chmod 000) are given back first. Never raises.
"""
from __future__ import annotations

import os
import stat

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: str) -> bool:
    """Remove `path` and everything below it; True when it is gone."""
    try:
        top = os.open(path, _DIR_FLAGS)
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.chmod(os.path.dirname(path) or ".", 0o700)
            os.unlink(path)
        except OSError:
            pass
        return not os.path.lexists(path)
    try:
        _fix_mode(top)
        moved, before = 0, None
        while True:  # each round removes or flattens something, or the same names stay: stop
            names = _names(top)
            if not names or names == before:
                break
            before = names
            for name in names:
                moved = _remove_entry(top, name, moved)
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except OSError:
        pass
    return not os.path.lexists(path)


def _remove_entry(top: int, name: str, moved: int) -> int:
    try:
        st = os.lstat(name, dir_fd=top)
    except OSError:
        return moved
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(name, dir_fd=top)
        except OSError:
            pass
        return moved
    try:
        os.rmdir(name, dir_fd=top)
        return moved
    except OSError:
        pass
    try:
        os.chmod(name, 0o700, dir_fd=top)  # a directory (lstat said so): no symlink to follow
        sub = os.open(name, _DIR_FLAGS, dir_fd=top)
    except OSError:
        return moved
    try:
        for child in _names(sub):
            try:
                is_dir = stat.S_ISDIR(os.lstat(child, dir_fd=sub).st_mode)
            except OSError:
                continue
            try:
                if is_dir:  # flatten: the subdirectory becomes an entry of the top directory
                    moved += 1
                    os.rename(child, f".evoforge-flat-{moved}", src_dir_fd=sub, dst_dir_fd=top)
                else:
                    os.unlink(child, dir_fd=sub)
            except OSError:
                pass
    finally:
        os.close(sub)
    try:
        os.rmdir(name, dir_fd=top)
    except OSError:
        pass
    return moved


def _names(fd: int) -> list[str]:
    try:
        with os.scandir(fd) as it:
            return [e.name for e in it]
    except OSError:
        return []


def _fix_mode(fd: int) -> None:
    try:
        os.fchmod(fd, 0o700)
    except OSError:
        pass
