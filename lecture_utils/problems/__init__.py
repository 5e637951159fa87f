"""The practice problems at the end of each notebook, one module per notebook (lecture_utils.practice).

Each module holds `PROBLEMS`, a dict from problem number (1, 2, ...) to `lecture_utils.practice.Problem`:
the question as the notebook shows it, the function that works the answer out with the package, and
the hints. napkin (notebook 00), dtypes (01), strides (02), named_axes (03), flops (04),
gradient_flops (05), optimizers (06), training_loop (07), mixed_precision (08), sharded_training (09).

A notebook's "## Practice" section, after its takeaways, is: a markdown intro; a code cell that
imports PROBLEMS; then for each problem, three cells: the markdown `problem.markdown()`; the
student's cell, `answer_N = None  # your answer, in <unit>` and `PROBLEMS[N].check(answer_N)`; and
the worked answer, whose cell metadata is {"jupyter": {"source_hidden": true, "outputs_hidden":
true}}, starting `# Worked answer N` / `worked = PROBLEMS[N].work()`, asserting a second route where
there is one, and ending with `worked`. tests/test_practice.py holds every section to that shape.
"""
