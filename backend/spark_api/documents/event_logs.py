"""``/logs``: an application's event logs as one zip, as the History Server sends them (each attempt's files under
their own names; a rolling log's parts under its directory's name)."""

from __future__ import annotations

import io
import shutil
import zipfile
from collections.abc import Iterable

from backend.spark_api.app_store import AppStore
from backend.stores import is_dir, open_read

__all__ = ["logs_zip"]


def logs_zip(stores: Iterable[AppStore]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for store in stores:
            rolling = is_dir(store.log)
            for path in store.files():
                name = f"{store.log.name}/{path.name}" if rolling else path.name
                with open_read(path) as src, z.open(name, "w") as dst:  # on disk or in a store, streamed
                    shutil.copyfileobj(src, dst, 1 << 20)
    return buf.getvalue()
