"""The run format: what a workdir of `causal_disent.main` holds and how to read it
back. Below both training (which writes runs) and evaluation and the user-facing
APIs (which read them):

  config_file   WORKDIR/config.json, written once and read back as a ConfigDict
  checkpoint    WORKDIR/checkpoints/<stage>/<step>/ (Orbax), with config signatures
  results       WORKDIR/results.json and WORKDIR/curves/<stage>.jsonl
  mcqvae, ct, causalvae, vae
                one module per stage: its checkpoint signature, its model and
                train state built from the config, and `load_trained`
"""
