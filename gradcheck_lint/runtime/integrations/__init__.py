"""Run the guard inside the frameworks people train with.

- `gradcheck_lint.runtime.integrations.lightning.GradientContractCallback`: a Lightning `Callback`.
- `gradcheck_lint.runtime.integrations.transformers.GradientContractCallback`: a Hugging Face
  `TrainerCallback`.
- Accelerate needs nothing: give `guard(model, optimizer)` the prepared objects (wrapped optimizers
  are unwrapped), or use the process-wide guard. `accelerator.backward` divides the loss by the
  window; the guard reads that division from the autograd graph.

Each module imports its framework only when it is imported itself.
"""
