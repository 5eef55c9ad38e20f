"""Races: one task given to several agents at once, each in its own copy of the user's tree.

* :mod:`.worktrees` makes a candidate's tree (``git worktree add --detach`` at HEAD with the
  user's uncommitted changes copied in, or a copy of a plain folder), measures what it
  changed against its baseline in the race's private store, and removes it again.
* :mod:`.run` runs every candidate's turn at once (each an ``acpcli prompt`` process of its
  own), then its ``--check``; :mod:`.board` draws them; :mod:`.record` keeps the race on
  disk (``ACPCLI_HOME/races/RACE/``); :mod:`.apply` brings one candidate's changes into the
  user's tree, 3-way, all or nothing.

Invariants: the user's index, refs, stash, hooks and branch are never written (``git
worktree add`` writes its own admin folder, which :func:`.worktrees.remove_tree` takes away;
no object is written into the user's repository); two races never share a tree or a store;
a failure while preparing removes what was made.
"""
