"""moto's server with two changes that give its DynamoDB the atomicity of the real one.

1. Requests are processed one at a time. Stock moto_server handles requests on many threads
   without locking its DynamoDB backend, so two concurrent conditional TransactWriteItems can
   both succeed — which real DynamoDB never allows, and which our concurrency tests rightly
   catch. Connections are still accepted concurrently.
2. TransactWriteItems checks every condition before it writes anything. Stock moto writes the
   items one by one and, when a condition fails, puts back a deep copy of the whole table taken
   before: each transaction costs time and memory in proportion to the table (its stream
   included), the stream briefly shows writes that were rolled back, and every open stream
   iterator is left reading the discarded copy, which never receives another record.
   `--stock-transactions` keeps moto's own behaviour (the stream poller's tests use it).

Usage: python scripts/moto_server.py [port] [--stock-transactions]   (binds 127.0.0.1 only)
"""
import signal
import sys
import threading

from werkzeug.serving import run_simple
from moto.dynamodb import models as ddb_models
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def _key_of(backend, op_type, op):
    if op_type != "Put":
        return op["Key"]
    table = backend.get_table(op["TableName"])
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def transact_write_items(self, transact_items):
    """Checks every item's condition against the current state, then applies all or nothing."""
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    ops, targets, errors = [], set(), []
    for item in transact_items:
        if len(item) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(item.items()))
        if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
            raise ValueError("Unsupported transaction operation")
        key = _key_of(self, op_type, op)
        target = (str(op["TableName"]), str(dict(sorted(key.items()))))
        if target in targets:
            raise MultipleTransactionsException()
        targets.add(target)
        ops.append((op_type, op, key))
        condition = op.get("ConditionExpression")
        current = self.get_item(op["TableName"], key)
        if condition is not None and not get_filter_expression(
            condition,
            op.get("ExpressionAttributeNames"),
            op.get("ExpressionAttributeValues"),
        ).expr(current):
            old = None
            if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                old = current.to_json()["Attributes"]
            errors.append(("ConditionalCheckFailed", ConditionalCheckFailed().message, old))
        else:
            errors.append((None, None, None))
    if any(code is not None for code, _, _ in errors):
        raise TransactionCanceledException(errors)
    for op_type, op, key in ops:
        names = op.get("ExpressionAttributeNames")
        values = op.get("ExpressionAttributeValues")
        if op_type == "Put":
            self.put_item(op["TableName"], op["Item"])
        elif op_type == "Delete":
            self.delete_item(op["TableName"], key)
        elif op_type == "Update":
            self.update_item(
                op["TableName"],
                key,
                update_expression=op["UpdateExpression"],
                expression_attribute_names=names,
                expression_attribute_values=values,
            )


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    port = int(args[0]) if args else 4566
    if "--stock-transactions" not in sys.argv:
        ddb_models.DynamoDBBackend.transact_write_items = transact_write_items
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
