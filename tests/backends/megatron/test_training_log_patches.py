"""The training_log patch binds, when it installs, the upstream functions a logged step calls (one batch's model
FLOPs, the number of micro-batches): a release that renamed or changed one fails the install, at start-up, naming
it, instead of failing in the first logged step. Checked on stand-ins for ``megatron.training.training``; the
real module is installed by every Megatron training test."""

from __future__ import annotations

import types

import pytest

from support.one_patch import installed

from primus.backends.megatron.session import TRACKING


def training_module(**overrides):
    def training_log(loss_dict, total_loss_dict, learning_rate, iteration, *rest): ...
    def num_floating_point_operations(args, batch_size): return 6.0 * batch_size
    def get_num_microbatches(): return 4
    def evaluate_and_print_results(*args, **kwargs): ...
    def setup_model_and_optimizer(*args, **kwargs): ...

    functions = dict(training_log=training_log, num_floating_point_operations=num_floating_point_operations,
                     get_num_microbatches=get_num_microbatches, evaluate_and_print_results=evaluate_and_print_results,
                     setup_model_and_optimizer=setup_model_and_optimizer)
    functions.update(overrides)
    return types.SimpleNamespace(**{k: v for k, v in functions.items() if v is not None})


def install(module):
    with installed("megatron.tracking.training_log", module):
        pass


@pytest.fixture(autouse=True)
def no_step_functions(monkeypatch):
    monkeypatch.setattr(TRACKING, "step_functions", None)


def test_the_step_functions_are_bound_at_install():
    module = training_module()
    install(module)
    assert TRACKING.step_functions.num_floating_point_operations is module.num_floating_point_operations
    assert TRACKING.step_functions.get_num_microbatches() == 4


def test_a_release_without_the_flops_formula_fails_the_install():
    with pytest.raises(AttributeError, match="num_floating_point_operations"):
        install(training_module(num_floating_point_operations=None))
    assert TRACKING.step_functions is None


def test_a_release_whose_flops_formula_takes_other_arguments_fails_the_install():
    def num_floating_point_operations(config, global_batch): return 1.0

    with pytest.raises(TypeError, match=r"has no argument 'args', 'batch_size'"):
        install(training_module(num_floating_point_operations=num_floating_point_operations))


def test_a_release_without_get_num_microbatches_fails_the_install():
    with pytest.raises(AttributeError, match="get_num_microbatches"):
        install(training_module(get_num_microbatches=None))
