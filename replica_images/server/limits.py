"""Connection limits of the control server: how many connections at once, and how long each phase may take.

The server gives each connection a thread. Without limits, a client that connects and
sends nothing, or one byte every few seconds (slow loris), holds its thread for ever,
and enough of them exhaust the replica's threads and pids. Here:

- at most ``MAX_CONNECTIONS`` connections are served at once; the next one is answered
  503 at once, by the accepting thread, and closed;
- a request line and its headers must be in within ``HEADER_TIMEOUT`` of the moment the
  server starts waiting for them, however slowly the bytes trickle. This is also how
  long an idle keep-alive connection stays open: httpx drops its idle connections after
  5 s, so the host's client never races the server's close;
- a body must be in within ``BODY_TIMEOUT`` of its headers (it is read only once the
  request is authorized and its length is within the route's limit: ``api.App.body_limit``),
  and a response must be taken within ``WRITE_TIMEOUT``.

A request that runs long (actions with waits, a command) holds its connection while it
runs: that is the authorized client's own time.
"""

import io
import json
import socketserver
import threading
import time

MAX_CONNECTIONS = 16
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 60.0
WRITE_TIMEOUT = 60.0

_BUSY_BODY = json.dumps({"error": f"the replica serves at most {MAX_CONNECTIONS} connections at once: "
                                  "retry later"}).encode()
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
        b"Retry-After: 1\r\nContent-Length: " + str(len(_BUSY_BODY)).encode() + b"\r\n\r\n" + _BUSY_BODY)


class DeadlineReader(io.RawIOBase):
    """A socket's input that raises TimeoutError once ``deadline`` (``time.monotonic()``) has passed.

    A socket timeout bounds one ``recv``; this bounds the sum of them, so bytes arriving
    slowly cannot stretch a request out.
    """

    def __init__(self, sock):
        super().__init__()
        self.sock = sock
        self.deadline = None

    def readable(self):
        return True

    def readinto(self, buf):
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request was not in within its time")
            self.sock.settimeout(left)
        return self.sock.recv_into(buf)


class SocketWriter(io.RawIOBase):
    """A socket's output whose every write must be taken within ``WRITE_TIMEOUT``."""

    def __init__(self, sock):
        super().__init__()
        self.sock = sock

    def writable(self):
        return True

    def write(self, data):
        self.sock.settimeout(WRITE_TIMEOUT)  # sendall's timeout bounds the whole write
        self.sock.sendall(data)
        return len(data)


class LimitedHandler:
    """Mixin for a ``BaseHTTPRequestHandler``: deadlines on reading a request and writing its answer."""

    def setup(self):
        super().setup()
        # Replace the stream's files with deadline-aware ones (closing the originals: each holds a
        # reference that would keep the socket open past shutdown_request).
        self.rfile.close()
        self.wfile.close()
        self._reader = DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self._reader)
        self.wfile = SocketWriter(self.connection)

    def handle_one_request(self):
        self._reader.deadline = time.monotonic() + HEADER_TIMEOUT
        super().handle_one_request()

    def read_body(self, length):
        """Exactly ``length`` bytes of body, within ``BODY_TIMEOUT``.

        Raises:
            TimeoutError: if they are not in by then.
            ValueError: if the connection ends first.
        """
        self._reader.deadline = time.monotonic() + BODY_TIMEOUT
        body = self.rfile.read(length) if length else b""
        if len(body) != length:
            raise ValueError(f"body ended after {len(body)} of its {length} bytes")
        return body


class BoundedThreadingMixIn(socketserver.ThreadingMixIn):
    """A thread per connection, at most ``max_connections`` at once; beyond that, 503 and close."""

    daemon_threads = True
    max_connections = MAX_CONNECTIONS
    # Connections wait in the listen backlog while the accept loop answers the ones before them.
    # socketserver's default of 5 overflowed on a quiet machine when clients connected in a burst:
    # a Unix-socket connect with a timeout then fails with EAGAIN instead of getting its 503.
    request_queue_size = 4 * MAX_CONNECTIONS

    def __init__(self, *args, **kwargs):
        self._slots = threading.BoundedSemaphore(self.max_connections)
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            try:
                request.setblocking(False)  # the accepting thread never waits on a client
                request.send(BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started (the pids limit): the slot is free again
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()
