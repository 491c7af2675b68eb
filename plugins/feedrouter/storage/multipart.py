"""S3 multipart uploads: large objects in parts, one part in memory, never a half-finished upload.

boto3's managed transfer (``upload_fileobj`` with a ``TransferConfig``) does this too, but with
threads that each hold a part, its own retry loop on top of botocore's, and its failures wrapped in
``S3UploadFailedError`` (whose cause is lost to :func:`feedrouter.storage.s3.classify`). The three
calls below keep memory at one part, errors in botocore's types (so they classify as transient or
terminal like every other call), and the contract S3 bills by: an upload that does not complete is
aborted, so its parts are deleted rather than kept (and charged) until a lifecycle rule runs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)


def upload_in_parts(client: Any, bucket: str, key: str, parts: Iterable[bytes]) -> int:
    """Upload ``parts`` (each but the last at least 5 MiB) as one object; returns the part count.

    Readers see nothing under ``key`` until the upload completes (S3 publishes the object at
    ``complete_multipart_upload`` only), like every other write of the store.

    Raises:
        whatever botocore raises; the upload is aborted first.
    """
    upload_id = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    try:
        done = [
            _upload_part(client, bucket, key, upload_id, number, data) for number, data in _numbered(parts)
        ]
        client.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": done}
        )
    except BaseException:
        abort(client, bucket, key, upload_id)
        raise
    return len(done)


def _numbered(parts: Iterable[bytes]) -> Iterable[tuple[int, bytes]]:
    return enumerate(parts, start=1)


def _upload_part(
    client: Any, bucket: str, key: str, upload_id: str, number: int, data: bytes
) -> dict[str, Any]:
    response = client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data)
    return {"PartNumber": number, "ETag": response["ETag"]}


def abort(client: Any, bucket: str, key: str, upload_id: str) -> None:
    """Abort an unfinished upload; a failure to abort is logged, never hides the original error."""
    with contextlib.suppress(Exception):
        client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        return
    log.warning(
        "could not abort the multipart upload %s of s3://%s/%s: remove it with a lifecycle rule",
        upload_id,
        bucket,
        key,
    )
