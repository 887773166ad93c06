"""moto's server with one change: requests are processed one at a time.

Stock moto_server handles requests on many threads without locking its DynamoDB backend, so two
concurrent conditional TransactWriteItems can both succeed — which real DynamoDB never allows,
and which our concurrency tests rightly catch. Serialising requests gives the emulator
DynamoDB's atomicity; connections are still accepted concurrently.

Usage: python scripts/moto_server.py [port]   (binds 127.0.0.1 only)
"""
import signal
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 4566
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialised(environ, start_response):
        with lock:
            # moto builds whole responses, so reading them inside the lock is enough.
            return list(app(environ, start_response))

    run_simple("127.0.0.1", port, serialised, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
