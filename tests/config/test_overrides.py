"""Command-line overrides sorted into experiment paths and module parameters, each mistake one message
naming the override and the fix."""

from primus.config.overrides import sort_overrides
from primus.config.yaml12 import Unparsed

MEGATRON = {"pre_trainer": {"framework": "megatron"}}
CREDENTIAL = ("a credential is given on the command line; it would be copied into every config dump, param upload "
              "and log. Delete it and export {} instead")


def test_experiment_paths_and_module_parameters_are_told_apart():
    out = sort_overrides(["workspace=/tmp/x", "exp_name=a=b", "modules.pre_trainer.overrides.lr=1e-4",
                          "train_iters=5"], MEGATRON)
    assert out.problems == []
    assert out.tree == {"workspace": "/tmp/x", "exp_name": "a=b", "modules.pre_trainer.overrides.lr": "1e-4"}
    assert out.modules == {"pre_trainer": {"train_iters": "5"}}
    assert isinstance(out.modules["pre_trainer"]["train_iters"], Unparsed)


def test_a_credential_on_the_command_line_is_refused_by_its_last_key():
    out = sort_overrides(["hf_token=abcdefgh", "modules.pre_trainer.overrides.wandb_api_key=0123456789"], MEGATRON)
    assert out.problems == [f"command line: hf_token: {CREDENTIAL.format('HF_TOKEN')}",
                            f"command line: modules.pre_trainer.overrides.wandb_api_key: "
                            f"{CREDENTIAL.format('WANDB_API_KEY')}"]
    assert out.tree == {} and out.modules == {}


def test_only_the_last_part_of_a_dotted_key_says_whether_it_is_a_credential_and_names_its_variable():
    out = sort_overrides(["x.password_policy.min_length=8", "x.my_section.my_api_key=abcdefgh"], {})
    assert out.problems == ["command line: x.password_policy.min_length: no module has this parameter; experiment "
                            "keys are work_group, user_name, exp_name, workspace, launch, modules",
                            f"command line: x.my_section.my_api_key: {CREDENTIAL.format('MY_API_KEY')}"]


def test_each_mistake_names_the_override_and_the_fix():
    out = sort_overrides(["nonsense", "train_iterz=3"], MEGATRON)
    assert out.problems == ["command line: 'nonsense' is not key=value; write e.g. train_iters=5",
                            "command line: train_iterz: no module has this parameter; did you mean train_iters?"]
    assert sort_overrides(["zzz=1"], {}).problems == [
        "command line: zzz: no module has this parameter; experiment keys are work_group, user_name, exp_name, "
        "workspace, launch, modules"]


def test_a_parameter_two_modules_know_must_name_its_module():
    out = sort_overrides(["train_iters=5"], {"a": {"framework": "megatron"}, "b": {"framework": "megatron"}})
    assert out.problems == ["command line: train_iters: more than one module has this parameter; write "
                            "modules.a.overrides.train_iters=5 or modules.b.overrides.train_iters=5"]


def test_a_dotted_upstream_key_goes_to_its_module_nested_and_an_unknown_one_is_refused():
    out = sort_overrides(["training.steps=3", "model.nme=x"], {"t": {"framework": "torchtitan"}})
    assert out.modules == {"t": {"training": {"steps": "3"}}}
    assert out.problems == ["command line: model.nme: no module has this parameter; experiment keys are "
                            "work_group, user_name, exp_name, workspace, launch, modules"]
