"""``toolmend stats``: what the hooks did, counted from their log lines.

One job per module:

* :mod:`toolmend._stats.logs` - reads log files (plain or JSON-formatted logging, mixed with
  other lines and tracebacks) and counts the lines toolmend's hooks write on logger
  ``toolmend``: repairs by provider and change code, problems left, loop guard findings,
  requests sent unrepaired by hook, requests sent once more after a provider's 400 (by rule,
  and by the provider's error: the rule toolmend lacks).
* :mod:`toolmend._stats.tables` - the counts as plain-text tables and as a JSON summary.
* :mod:`toolmend._stats.html` - the same as one self-contained HTML page with an SVG chart.

The hooks' log lines name change codes, message indexes and tool call ids, never content;
what this package prints keeps the codes and counts and drops the indexes and ids.
"""
