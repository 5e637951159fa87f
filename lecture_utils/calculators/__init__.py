"""What-if calculators an instructor can drag: one module per calculator, and the layout they share.

training_time (notebook 00): parameters, tokens, GPUs, card, dtype, MFU -> FLOPs and days.
memory (notebook 09): parameters, recipe, ZeRO stage, GPUs, card memory -> bytes per GPU.
roofline (notebook 04): one matmul shape, card, dtype -> intensity, attainable FLOP/s, the bound.

Each has a pure function computed by the package's tested helpers (the numbers the cells above it
print) and a widget that calls it whenever a control moves. `layout.show_calculator` shows the
widget with its starting result as the plain text behind it, which readers see where widgets do
not run.
"""
