"""Tables: tabular benchmarks that answer a trial without training (`Table`), and the loop's
evaluator over one (`lookup.TableEvaluator`)."""
