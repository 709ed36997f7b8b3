"""Causal discovery over concept labels.

  pc: the PC algorithm (stable skeleton, colliders, Meek R1–R3, DAG extension);
      `pc.pc(data)` is the entry point.
  ci_tests: a nonlinear conditional-independence test, kNN-regression residuals +
      HSIC with a permutation p-value.
  orientation: collider orientation and Meek's rules on partially directed graphs.
  graphs: CPDAGs, Markov equivalence, DAG extension, d-separation, CI disagreement.

Convention: graph[j, i] = 1 means j -> i (row = cause, column = effect).
"""
