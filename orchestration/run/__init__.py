"""Running an approved plan: the compact run log, its expansion, and the hosts' shared policy.

The engine (:mod:`orchestration.engine`) records a run as a compact log
(:mod:`orchestration.run.log`): O(1) per entry, whatever the depth of the plan. Everything a
user or another service sees is the contract's ``RunEvent`` form, which
:func:`orchestration.run.expand.expand_log` derives from it.
"""
