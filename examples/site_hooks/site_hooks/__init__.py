"""Example hook plugins for nova-async: `naming` (refuse servers whose name breaks the site's
rule) and `build_log` (a JSON line for every server built)."""
