"""``/logs``: an application's event logs as one zip, as the History Server sends them (each attempt's files under
their own names; a rolling log's parts under its directory's name)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable

from backend.spark_api.app_store import AppStore

__all__ = ["logs_zip"]


def logs_zip(stores: Iterable[AppStore]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for store in stores:
            for path in store.files():
                name = f"{store.log.name}/{path.name}" if store.log.is_dir() else path.name
                z.write(path, name)
    return buf.getvalue()
