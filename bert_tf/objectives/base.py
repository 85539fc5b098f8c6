"""What a trainer needs from an objective: its loss as sums over examples, and its metrics.

An objective splits its loss into terms, each `numerator / denominator`, where denominators
depend on the inputs only (number of examples, sum of masked-LM weights). The trainer sums
numerators over micro-batches and divides by the whole batch's denominators, so gradient
accumulation over k micro-batches gives exactly the gradient of one big batch.
Metrics are (sum, count) pairs so they average exactly over steps and replicas.
"""


class Objective:
    """Base class. Subclasses set `metric_names` and `loss_terms` and implement the three
    methods (`loss_terms` are the keys of denominators() and numerators())."""

    metric_names = ()
    loss_terms = ()

    def denominators(self, features):
        """{term: scalar} from the inputs alone."""
        raise NotImplementedError

    def numerators(self, outputs, features):
        """{term: scalar sum over the batch} from the model outputs."""
        raise NotImplementedError

    def metrics(self, outputs, features):
        """{name: (sum, count)} for each name in metric_names."""
        raise NotImplementedError

    def model_inputs(self, features):
        """The part of `features` the model is called with (default: everything)."""
        return features
