"""Plans that agents propose, a person approves, and Temporal runs once.

The folder listing is the architecture:

* :mod:`orchestration.types`: the wire types of every shared contract (one source of truth);
  :mod:`orchestration.errors`: every refusal, with its code;
* :mod:`orchestration.plan`: values, ops and the fold, raw views, the graph, authoring;
* :mod:`orchestration.review`: freeze checks, approval and signing, render and pictures;
* :mod:`orchestration.run`: the engine, the run log and ``fold_run``, the run loop both hosts
  drive, and the in-process host;
* :mod:`orchestration.tools`: toolboxes, allowlists, tool shapes, reasoners;
* :mod:`orchestration.store`: the ``PlanStore`` protocol, its stores and conformance suite;
* :mod:`orchestration.predicates`: the cells that decide branches and selects;
* :mod:`orchestration.artifacts`, :mod:`orchestration.templates`: artifacts and their
  methods; plan templates;
* :mod:`orchestration.forge`: the tools a model authors plans with (and their MCP server);
* :mod:`orchestration.api`: ``create_orchestration``, the facade over all of it;
* :mod:`orchestration.cli`: the ``orch`` command line.

No module here imports a Temporal worker, a workflow or an activity; ``workflows/``,
``activities/`` and ``workers/`` import this package, never the reverse (the CLI reaches them
through :mod:`workers.client` alone).
"""
