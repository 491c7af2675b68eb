"""Inter-document join subscriptions (issue 16, paper 001 MMQJP).

A join subscription binds two *blocks* (a binding path over a feed's stream with its local
conditions), equates string values between them and bounds their event times. Stage 1 is the shared
router, which delivers each block's bound nodes as witnesses; stage 2 evaluates one relational
conjunctive query per *template*, the graph-minor reduced shape of a join graph
(:mod:`feedrouter.join.templates`).
"""
