"""A host's uptime as `uptime(1)` prints it, which is what Nova's os-hypervisors uptime
answers with: " 10:01:02 up 3 days,  4:05,  0 users,  load average: 0.10, 0.20, 0.30"."""

from __future__ import annotations

import os
import time
from pathlib import Path


def host_uptime(proc_uptime: Path = Path("/proc/uptime")) -> str:
    seconds = int(float(proc_uptime.read_text().split()[0]))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    up = (f"{days} day{'s' if days != 1 else ''}, " if days else "") + f"{hours:2d}:{rest // 60:02d}"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f" {time.strftime('%H:%M:%S')} up {up},  0 users,  load average: {load}"
