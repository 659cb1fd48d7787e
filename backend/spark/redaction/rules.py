"""Redaction rules: a Spark event's strings without the machine it ran on, and without the secrets Spark left in it.

A Spark event log is a post-mortem worth sharing, and it is full of the machine that wrote it (paths, user and host
names, addresses, the classpath, properties, log URLs) and of secrets Spark does not redact outside the environment
event (passwords in JDBC URLs, `--conf ...secret.key=...`, tokens, AWS keys). Every string of an event (keys and
values) goes through the rules in order: **secrets** become Spark's own `*********(redacted)`; **URLs** keep their
scheme, a host placeholder, the port and the last path segment; **file paths** keep only their last segment
(`count at job.py:42`, as Spark names Scala call sites); **hosts** become `host-1`, `host-2`, ... in order of first
appearance, user names `user`. Whole parts go: the classpath, Hadoop and most system properties, executor and driver
log URLs and attributes. Everything the Spark model needs stays exactly as it was (types, ids, names and scopes,
counts, times, statuses, metrics).

The mapping lives in a `Redactor` and is never written, so redacting a log twice gives the same bytes, event by
event (`flowscope record --redact`) or as a file (`backend/spark/redaction/rewrite.py`).
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "Redactor", "redact_event"]

REDACTED = "*********(redacted)"  # what Spark itself writes for a redacted value

# --- what is a secret -------------------------------------------------------------------------------------------

_SECRET_WORDS = (
    r"password|passwd|pwd|secret|token|credential|access[._-]?key|private[._-]?key|api[._-]?key|apikey"
    r"|keytab|principal|signature|session[._-]?key|client[._-]?key|auth[._-]?key"
)
_SECRET_KEY = re.compile(rf"(?i)(?:{_SECRET_WORDS})")
# `some.secret.key=value` / `password: value` inside free text (command lines, JDBC URLs, plans, messages)
_SECRET_ASSIGN = re.compile(
    rf"(?i)((?<![\w])[\w.-]*(?:{_SECRET_WORDS})[\w.-]*[\"']?\s*(?:=|:)\s*)"
    rf"(\*{{9}}\(redacted\)|\"[^\"]*\"|'[^']*'|[^\s,;&\"'}}\])]+)"
)
_USER_ASSIGN = re.compile(r"(?i)((?<![\w.])(?:user|username|uid)\s*=\s*)([^\s&;,\"')\]}]+)")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@")
_BEARER = re.compile(r"(?i)\b(bearer|authorization[\"']?\s*[:=]\s*[\"']?basic)\s+[A-Za-z0-9._~+/-]{8,}=*")
_TOKEN_SHAPES = re.compile(
    r"\b(?:(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|sk-[A-Za-z0-9_-]{20,}"  # API secret keys of the sk- kind
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"  # JWTs
)
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S)

# --- where the machine shows --------------------------------------------------------------------------------------

_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s\"'<>?#]*)((?:/[^\s\"'<>?#]*)?)((?:[?#][^\s\"'<>]*)?)")
_SEG = r"[^\s/\\\"'<>|:,;=()\[\]{}*?]"
_POSIX_PATH = re.compile(rf"(?<![\w/.~-])~?/{_SEG}+(?:/{_SEG}*)*")
_WIN_PATH = re.compile(r"(?<![\w])[A-Za-z]:\\(?:[^\\\s\"'<>|:*?]+\\)+[^\\\s\"'<>|:*?,;]*")
_HOME_ROOTS = ("home", "Users", "users")
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?!\.?\w)")
_IPV6 = re.compile(
    r"(?<![\w:.])(?:(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}"
    r"|(?=[0-9a-fA-F:]*[a-fA-F1-9])(?:[0-9a-fA-F]{1,4}:){1,6}:(?:[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4})*)?"
    r"|::(?:[0-9a-fA-F]{1,4}:){0,5}[0-9a-fA-F]{1,4})(?![\w:])"
)
_EC2_HOST = re.compile(r"(?<![\w.-])ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[a-z0-9-]+)*(?![\w-])")
_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_DOTTED_HOST = re.compile(
    rf"(?<![\w./-])(?:(?:{_LABEL}\.){{2,}}(?:com|net|org|io|edu|gov|cloud|dev)"  # host.domain.tld
    rf"|(?:{_LABEL}\.)+(?:internal|local|localdomain|lan|corp|intra|intranet|compute|cluster))(?![\w-]|\.\w)"
)

# Keys whose string value is a host, host:port, or a comma-separated list of them (by their last dotted part).
_HOST_KEY_NAMES = {"host", "hostname", "hosts", "hostid", "hostport", "address", "bindaddress", "advertiseaddress",
                   "proxyhosts", "nodeid", "nmhost", "driverhost"}
# Keys whose value is a directory of the machine: even its last segment says too much (`spark.home`: `alice-spark`).
_DIR_KEYS = {"spark.home", "spark.local.dir", "user.dir", "user.home", "java.io.tmpdir", "spark.yarn.stagingDir",
             "spark.sql.warehouse.dir", "SPARK_HOME", "HOME", "PWD", "LOCAL_DIRS", "spark.driver.log.dfsDir"}
_USER_KEYS = {"User", "Spark User", "user", "user.name", "USER", "sparkUser", "spark.app.submitter"}
# Parts of events dropped whole: what they say is the machine.
_DROP_TO_EMPTY = {"Log Urls", "Attributes", "Driver Logs", "Driver Attributes", "logUrlInfo", "attributes",
                  "Classpath Entries", "Hadoop Properties"}
_KEEP_SYSTEM_PROPERTIES = {"java.version", "java.vm.name", "java.runtime.version", "java.specification.version",
                           "java.vendor", "os.name", "os.arch", "file.encoding", "sun.arch.data.model"}
_GENERIC_USERS = {"root", "user", "spark", "hadoop", "yarn", "hive", "hdfs", "admin", "ubuntu", "ec2-user", "nobody",
                  "app", "jovyan", "runner", "build", "test", "unknown", "anonymous", "default"}
_LOOPBACK = {"127.0.0.1", "::1", "0:0:0:0:0:0:0:1", "localhost"}
_KEY_QUICK = re.compile(r"[/\\@]|\d+\.\d+\.\d+\.\d+")
_QUICK = re.compile(r"[/\\@:=]|\d\.\d|\.[a-z]{2,}|ip-\d|bearer|basic|-----|AKIA|ASIA|\b[A-Za-z0-9/+]{40}\b", re.I)


class Redactor:
    """Rewrites Spark events without machine details or secrets; remembers which host became which placeholder.

    One instance per log keeps names consistent from event to event. `local=True` (default) also removes this
    machine's host name, user name and home directory wherever they appear, even in places the rules would miss.
    """

    def __init__(self, *, local: bool = True, hosts: Iterable[str] = (), users: Iterable[str] = ()) -> None:
        self._hosts: dict[str, str] = {}
        self._next_host = 1
        self._users: set[str] = set()
        self._host_re: re.Pattern[str] | None = None
        self._user_re: re.Pattern[str] | None = None
        self._dirty = False
        self._cache: dict[str, str] = {}
        if local:
            for name in _local_hosts():
                self.host(name)
            for user in _local_users():
                self._add_user(user)
        for name in hosts:
            self.host(name)
        for user in users:
            self._add_user(user)

    # --- public -----------------------------------------------------------------------------------------------

    def event(self, event: dict) -> dict:
        """A redacted copy of one event (the input is not modified)."""
        self._register(event)
        kind = event.get("Event")
        if kind == "SparkListenerEnvironmentUpdate":
            return self._environment(event)
        return self._value(event, None)

    def text(self, s: str) -> str:
        """One free-text string, redacted (what every string value of an event goes through)."""
        if self._dirty:
            self._compile()
        cached = self._cache.get(s)
        if cached is not None:
            return cached
        out = self._text(s)
        if len(s) <= 512 and len(self._cache) < 100_000:  # names and metric labels repeat; plans and traces do not
            self._cache[s] = out
        return out

    def host(self, name: str) -> str:
        """The placeholder for a host name or address (registered on first sight)."""
        name = name.strip()
        if not name:
            return name
        low = name.lower()
        if low in _LOOPBACK or low.startswith("127."):
            return "localhost"
        if low in ("0.0.0.0", "::", "*"):
            return "any-host"
        if low == "driver" or name.startswith("$"):
            return name
        placeholder = self._hosts.get(low)
        if placeholder is None:
            short = low.split(".", 1)[0]
            dotted = short != low and not _IPV4.fullmatch(low) and len(short) >= 3
            placeholder = self._hosts.get(short) if dotted else None  # `box.lan` is `box`
            if placeholder is None:
                placeholder = f"host-{self._next_host}"
                self._next_host += 1
            self._hosts[low] = placeholder
            if dotted:
                self._hosts.setdefault(short, placeholder)
            self._dirty = True
            self._cache.clear()
        return placeholder

    # --- structure --------------------------------------------------------------------------------------------

    def _register(self, obj: Any) -> None:
        """Learn host and user names from the structured fields before any text is rewritten."""
        if isinstance(obj, dict):
            for k, v in obj.items():
                if isinstance(v, str):
                    kind = _key_kind(k)
                    if kind == _HOST:
                        for item in v.split(","):
                            host = _host_part(item)
                            if host and not _IPV4.fullmatch(host) and not host.startswith("$") and " " not in host:
                                self.host(host)
                    elif kind == _USER:
                        self._add_user(v)
                elif isinstance(v, (dict, list)):
                    self._register(v)
        elif isinstance(obj, list):
            for v in obj:
                if isinstance(v, (dict, list)):
                    self._register(v)

    def _value(self, v: Any, key: str | None) -> Any:
        if isinstance(v, str):
            return self._string(v, key)
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k in _DROP_TO_EMPTY and isinstance(x, (dict, list)):
                    out[k] = type(x)()
                    continue
                if _key_kind(k) & _REWRITE_KEY:
                    k2 = self.text(k)
                else:
                    k2 = k
                if isinstance(x, (str, dict, list)):
                    x = self._value(x, k)
                out[k2] = x
            return out
        if isinstance(v, list):
            return [self._value(x, key) if isinstance(x, (str, dict, list)) else x for x in v]
        return v

    def _string(self, v: str, key: str | None) -> str:
        kind = _key_kind(key) & ~_REWRITE_KEY if key is not None else _PLAIN
        if kind == _PLAIN or not v:
            return self.text(v)
        if kind == _USER:
            return "user"
        if kind == _SECRET:
            return v if v == REDACTED or v.strip().lower() in ("true", "false") else REDACTED
        if kind == _DIR:
            return "redacted-path"
        return ",".join(self._host_value(item) for item in v.split(","))

    def _host_value(self, v: str) -> str:
        if not v.strip() or v.startswith("$"):
            return v
        host, sep, port = v.rpartition(":") if v.count(":") == 1 else (v, "", "")
        if sep and port.isdigit():
            return f"{self.host(host)}:{port}" if host else v
        return self.host(v) if v and " " not in v and "/" not in v else self.text(v)

    def _environment(self, event: dict) -> dict:
        out: dict[str, Any] = {}
        for k, v in event.items():
            if k == "System Properties" and isinstance(v, dict):
                out[k] = {p: self.text(x) if isinstance(x, str) else x
                          for p, x in v.items() if p in _KEEP_SYSTEM_PROPERTIES}
            elif k == "JVM Information" and isinstance(v, dict):
                out[k] = {p: (_last_segment(x) if p == "Java Home" and isinstance(x, str) else self._value(x, p))
                          for p, x in v.items()}
            else:
                out[k] = self._value(v, k) if k not in _DROP_TO_EMPTY else type(v)()
        return out

    # --- text -------------------------------------------------------------------------------------------------

    def _add_user(self, user: str) -> None:
        user = user.strip()
        if user and user not in self._users and user.lower() not in _GENERIC_USERS and len(user) >= 3 \
                and re.fullmatch(r"[\w.@-]+", user):
            self._users.add(user)
            self._dirty = True
            self._cache.clear()

    def _compile(self) -> None:
        self._dirty = False
        names = sorted((h for h in self._hosts if len(h) >= 2), key=len, reverse=True)
        self._host_re = (re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, names)) + r")(?![\w-]|\.\w)", re.I)
                         if names else None)
        users = sorted(self._users, key=len, reverse=True)
        self._user_re = (re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, users)) + r")(?![\w-])")
                         if users else None)

    def _text(self, s: str) -> str:
        if (not _QUICK.search(s) and not _TOKEN_SHAPES.search(s)
                and (self._host_re is None or not self._host_re.search(s))
                and (self._user_re is None or not self._user_re.search(s))):
            return s
        # secrets first, so nothing below can carry one along
        s = _PEM.sub(REDACTED, s)
        s = _URL_USERINFO.sub(lambda m: m.group(1) + "redacted@", s)
        s = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", s)
        s = _SECRET_ASSIGN.sub(_secret_assignment, s)
        s = _USER_ASSIGN.sub(lambda m: m.group(1) + "user", s)
        s = _TOKEN_SHAPES.sub(REDACTED, s)
        s = _AWS_SECRET.sub(lambda m: REDACTED if _looks_random(m.group(0)) else m.group(0), s)
        # then the machine
        s = _URL.sub(self._url, s)
        s = _WIN_PATH.sub(lambda m: _last_segment(m.group(0).replace("\\", "/")), s)
        s = _POSIX_PATH.sub(self._path, s)
        s = _IPV4.sub(lambda m: self.host(m.group(0)), s)
        s = _IPV6.sub(lambda m: self.host(m.group(0)) if ":" in m.group(0) and len(m.group(0)) > 2 else m.group(0), s)
        s = _EC2_HOST.sub(lambda m: self.host(m.group(0)), s)
        s = _DOTTED_HOST.sub(lambda m: self.host(m.group(0)), s)
        if self._dirty:
            self._compile()
        if self._host_re is not None:
            s = self._host_re.sub(lambda m: self.host(m.group(0)), s)
        if self._user_re is not None:
            s = self._user_re.sub("user", s)
        return s

    def _url(self, m: re.Match[str]) -> str:
        scheme, authority, path, query = m.groups()
        userinfo, at, authority = authority.rpartition("@")
        host, sep, port = authority.rpartition(":")
        if not sep or not port.isdigit():
            host, port = authority, ""
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        out = scheme + ("redacted@" if at else "") + (self.host(host) if host else "") + (f":{port}" if port else "")
        if path and path != "/":
            last = _last_segment(path)
            out += "/" + last if last not in ("", "~") else "/"
        elif path:
            out += "/"
        if query:
            out += _SECRET_ASSIGN.sub(_secret_assignment, query)
        return out

    def _path(self, m: re.Match[str]) -> str:
        p = m.group(0)
        if "/" not in p.lstrip("/") and not p.startswith("~"):
            # a single segment: `/root` is a home directory, `/tmp` or `/metrics` are not the machine's
            return "~" if p.rstrip("/") == "/root" else p
        parts = [x for x in p.split("/") if x]
        if len(parts) >= 2 and parts[0] in _HOME_ROOTS:
            self._add_user(parts[1])
        if not parts or (len(parts) <= 2 and parts[0] in _HOME_ROOTS) or p.rstrip("/") in ("/root", "~"):
            return "~"
        return _last_segment(p)


_PLAIN, _USER, _SECRET, _DIR, _HOST, _REWRITE_KEY = 0, 1, 2, 3, 4, 8
_KEY_KINDS: dict[str, int] = {}


def _key_kind(key: str) -> int:
    """What a key says about its string value: user, secret, directory, host, or plain text.

    Plus `_REWRITE_KEY` when the key itself needs rewriting (a path or an address as a key). Cached: logs repeat their
    keys."""
    kind = _KEY_KINDS.get(key)
    if kind is None:
        last = key.rsplit(".", 1)[-1].lower().replace("_", "").replace(" ", "")
        if key in _USER_KEYS:
            kind = _USER
        elif _SECRET_KEY.search(key):
            kind = _SECRET
        elif key in _DIR_KEYS:
            kind = _DIR
        elif last in _HOST_KEY_NAMES:
            kind = _HOST
        else:
            kind = _PLAIN
        if _KEY_QUICK.search(key):
            kind |= _REWRITE_KEY
        if len(_KEY_KINDS) < 100_000:
            _KEY_KINDS[key] = kind
    return kind


def _last_segment(p: str) -> str:
    parts = [x for x in p.replace("\\", "/").split("/") if x]
    if not parts:
        return p
    if len(parts) <= 2 and parts[0] in _HOME_ROOTS or parts == ["root"] or parts == ["~"]:
        return "~"
    return parts[-1]


def _host_part(v: str) -> str:
    v = v.strip()
    if "://" in v:
        v = v.split("://", 1)[1].split("/", 1)[0]
    if v.count(":") == 1:
        v = v.split(":", 1)[0]
    return v


def _secret_assignment(m: re.Match[str]) -> str:
    """`secret.key=value` in text loses its value.

    Kept: booleans, values already redacted, and numbers after a colon (`TokenCache.java:45` in a stack trace is a line
    number, not a token)."""
    head, value = m.groups()
    v = value.strip("\"'").lower()
    if v in ("true", "false", "") or value == REDACTED or (head.rstrip().endswith(":") and v.isdigit()):
        return m.group(0)
    return head + REDACTED


def _looks_random(s: str) -> bool:
    """A 40-character run with upper, lower case and digits: an AWS secret key, not a hash or a word."""
    return any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)


def _local_hosts() -> list[str]:
    names = []
    for fn in (socket.gethostname, socket.getfqdn):
        try:
            name = fn()
        except OSError:  # pragma: no cover
            continue
        if name and name.lower() not in _LOOPBACK and name not in names:
            names.append(name)
    return names


def _local_users() -> list[str]:
    users = []
    try:
        users.append(getpass.getuser())
    except Exception:  # pragma: no cover - no user name at all
        pass
    home = os.path.expanduser("~")
    if home and home not in ("~", "/"):
        users.append(os.path.basename(home.rstrip("/")))
    return users


def redact_event(event: dict, redactor: Redactor | None = None) -> dict:
    """One event, redacted. Pass the same `redactor` for every event of a log to keep host names consistent."""
    return (redactor or Redactor()).event(event)
