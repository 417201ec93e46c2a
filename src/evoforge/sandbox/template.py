"""The clean template a zygote forks every evaluation's child from (issue 9).

Right after its start, before it reads any request, the zygote forks this process. It never
sees a request: for each evaluation the zygote puts the request in a memfd and sends it, with
the output pipes, over a socketpair (SCM_RIGHTS); the template forks, reports the child's pid,
waits for it and reports its wait status. The child reads the request itself. So a child's
memory holds nothing of earlier programs (their source, output, results pass through the
zygote, never through the template), whatever it scans.
"""
from __future__ import annotations

import gc
import importlib
import json
import os
import select
import signal
import socket
from typing import Any, NoReturn

from evoforge.sandbox import limits
from evoforge.sandbox.protocol import ChannelClosed


class TemplateMixin:
    """The template's side of Zygote (uses its cmd_in/cmd_out, features, cgroup and _child)."""

    cmd_in: int
    cmd_out: int
    features: dict[str, Any]
    cgroup: Any
    tsock: socket.socket | None
    template_pid: int
    _child: Any  # Zygote._child: confine, then run the harness

    def _start_template(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            ours.close()
            os.close(self.cmd_in)
            os.close(self.cmd_out)
            self._template(theirs)
        theirs.close()
        self.tsock, self.template_pid = ours, pid

    def _template(self, sock: socket.socket) -> NoReturn:
        self.template_pid = os.getpid()  # what its children check their parent against
        try:
            limits.die_with_parent(signal.SIGKILL)
            if os.getppid() != self.features["pid"]:
                os._exit(0)
            if self.cgroup is not None:
                # once here, not per child (a move costs ~0.3 ms): every child is born in it, so each
                # page an evaluation allocates counts, memfd and shared memory included
                self.cgroup.enter()
            while True:
                msg, fds, _, _ = socket.recv_fds(sock, 1024, 8)
                if not msg:
                    break
                cmd = json.loads(msg)
                if "import" in cmd:
                    for name in cmd["import"]:
                        import_quietly(name)
                    gc.freeze()
                    sock.send(b"{}")
                    continue
                pid = os.fork()
                if pid == 0:
                    sock.close()
                    self._child_from_template(fds)
                for fd in fds:
                    os.close(fd)
                sock.send(json.dumps({"pid": pid}).encode())
                _, status = os.waitpid(pid, 0)
                sock.send(json.dumps({"exit": pid, "status": status}).encode())
        except BaseException:
            pass
        os._exit(0)

    def _from_template(self, timeout: float = 30.0) -> dict[str, Any]:
        assert self.tsock is not None
        if not select.select([self.tsock], [], [], timeout)[0]:
            raise ChannelClosed("the template process does not answer")
        msg = self.tsock.recv(1024)
        if not msg:
            raise ChannelClosed("the template process died")
        return json.loads(msg)

    def _child_from_template(self, fds: list[int]) -> NoReturn:
        """In the forked child: read the request the zygote put in the memfd, then confine and run."""
        try:
            out_w, err_w, res_w, req_fd = fds
            os.lseek(req_fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(req_fd, 1 << 20):
                chunks.append(chunk)
            os.close(req_fd)
            req = json.loads(b"".join(chunks))
        except BaseException as exc:
            try:
                os.write(fds[1] if len(fds) > 1 else 2, f"sandbox setup failed: {exc!r}\n".encode())
            finally:
                os._exit(121)
        self._child(req, req["workdir"], out_w, err_w, res_w)
        os._exit(121)  # not reached


def import_quietly(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:
        pass  # a missing optional library only costs the program its own import
