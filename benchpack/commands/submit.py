"""`benchpack submit <bundle> --server URL --token T`."""

from __future__ import annotations

import os
import sys
from pathlib import Path



def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "submit",
        help="upload a result bundle to a registry service and wait for validation",
        description="Upload a bundle directory (packed on the fly) or a .tar.gz/.zip made by "
        "`benchpack registry bundle pack`, then poll until it is validated.",
    )
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--server", required=True, help="registry base URL, e.g. https://registry.example.org")
    parser.add_argument("--token", default=os.environ.get("BENCHPACK_TOKEN", ""),
                        help="API token (default: $BENCHPACK_TOKEN)")
    parser.add_argument("--no-wait", action="store_true", help="return after the upload is accepted")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for validation")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from benchpack.bundles import submit as submitting  # httpx: imported only when submitting

    def show(state: str) -> None:
        print(f"state: {state}", flush=True)

    try:
        result = submitting.submit_bundle(args.bundle, args.server, args.token, wait=not args.no_wait,
                               timeout_s=args.timeout, on_state=show)
    except submitting.SubmitError as exc:
        print(f"benchpack submit: {exc}", file=sys.stderr)
        return 1
    submission = result.submission
    if not result.created:
        print("this archive was submitted before; showing that submission")
    print(f"submission {submission['id']}: {submission['state']}")
    print(f"{args.server.rstrip('/')}/submissions/{submission['id']}/")
    if submission["state"] == "invalid":
        print("failed checks: " + ", ".join(submission.get("error_codes") or []), file=sys.stderr)
        return 1
    if submission["state"] == "failed":  # the server could not finish; not a verdict on the bundle
        print("validation could not be completed (" + ", ".join(submission.get("error_codes") or [])
              + "); the bundle was not judged: submit it again later", file=sys.stderr)
        return 1
    return 0
