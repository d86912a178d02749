"""The web dashboard: a single-page application served by the compute API's process, on
its port, under /dashboard/.

Why a static page app and not server-rendered templates: the dashboard must never see more
than its user may, so it is simply another client of the public APIs. The browser logs in
to Keystone (`POST /v3/auth/tokens`), keeps the token for its tab (sessionStorage), and
calls compute, image, network, volume and placement with it exactly as the `openstack`
CLI would; the process serves files and nothing else for it (no session store, no
privileged back end, no second code path to keep in step with the API's policy). Live
updates come from the public event stream (`GET /compute/v2.1/events`), one per tab.

The files are plain ES modules, written to be read as they are: no build step, no npm at
build or run time. Third-party code (xterm.js) is vendored under static/vendor/ at a
pinned version with its licence; noVNC is Debian's package, served by the console proxy.
Nothing is fetched from anywhere but this process (the Content-Security-Policy says so).
"""
