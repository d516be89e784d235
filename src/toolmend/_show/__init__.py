"""``toolmend show``: a history as a timeline, in the terminal and as an HTML page.

One job per module:

* :mod:`toolmend._show.timeline` - the format-independent model: rows (index, role, preview,
  calls and results linked by label, problems, changes) built from the format's skeleton
  and :func:`toolmend.check` / :func:`toolmend.repair`, and the two timelines aligned.
* :mod:`toolmend._show.text` - the terminal renderer (plain, or coloured on a terminal).
* :mod:`toolmend._show.html` - the self-contained HTML page.
* :mod:`toolmend._show.content` - what a message says: previews and full content, for display
  only.

This is the one part of toolmend that shows message content, because a user asked to see it;
nothing here logs.
"""
