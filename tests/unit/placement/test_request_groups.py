"""Parsing the query string of GET /allocation_candidates into request groups."""

from urllib.parse import parse_qs

import pytest

from nova_async.common import errors
from nova_async.placement.request_groups import RequestGroup, parse

A = "11111111-1111-1111-1111-111111111111"
B = "22222222-2222-2222-2222-222222222222"


def parsed(query: str, minor: int = 39):
    return parse(parse_qs(query, keep_blank_values=True), minor)


@pytest.mark.parametrize("query, minor, group", [
    ("resources=VCPU:1", 10, RequestGroup(resources={"VCPU": 1})),
    ("resources=VCPU:1&required=HW_CPU_X86_AVX2,CUSTOM_X", 17,
     RequestGroup(resources={"VCPU": 1}, required=(frozenset({"HW_CPU_X86_AVX2"}), frozenset({"CUSTOM_X"})))),
    ("resources=VCPU:1&required=!CUSTOM_X", 22,
     RequestGroup(resources={"VCPU": 1}, forbidden=frozenset({"CUSTOM_X"}))),
    ("resources=VCPU:1&required=in:CUSTOM_X,CUSTOM_Y&required=CUSTOM_Z", 39,
     RequestGroup(resources={"VCPU": 1},
                  required=(frozenset({"CUSTOM_X", "CUSTOM_Y"}), frozenset({"CUSTOM_Z"})))),
    (f"resources=VCPU:1&member_of=in:{A},{B}", 21,
     RequestGroup(resources={"VCPU": 1}, member_of=(frozenset({A, B}),))),
    (f"resources=VCPU:1&member_of={A}&member_of=!{B}", 32,
     RequestGroup(resources={"VCPU": 1}, member_of=(frozenset({A}),), not_member_of=frozenset({B}))),
    (f"resources=VCPU:1&member_of=!in:{A},{B}", 32,
     RequestGroup(resources={"VCPU": 1}, not_member_of=frozenset({A, B}))),
    (f"resources=VCPU:1&in_tree={A}", 31, RequestGroup(resources={"VCPU": 1}, in_tree=A)),
])
def test_unnumbered_group(query, minor, group):
    assert parsed(query, minor).groups == (group,)


def test_granular_groups_and_request_wide_options():
    req = parsed(f"resources=VCPU:1&resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYS&member_of1={A}"
                 "&resources_GPU=VGPU:1&in_tree_GPU=" + B + "&group_policy=isolate&limit=5"
                 "&root_required=CUSTOM_GOLD,!CUSTOM_BAD&same_subtree=1,_GPU")
    assert [g.suffix for g in req.groups] == ["", "1", "_GPU"]
    assert req.groups[1] == RequestGroup("1", {"SRIOV_NET_VF": 1}, (frozenset({"CUSTOM_PHYS"}),),
                                         member_of=(frozenset({A}),))
    assert req.groups[2].in_tree == B
    assert (req.group_policy, req.limit) == ("isolate", 5)
    assert (req.root_required, req.root_forbidden) == (frozenset({"CUSTOM_GOLD"}), frozenset({"CUSTOM_BAD"}))
    assert req.same_subtree == (("1", "_GPU"),)
    assert req.trait_names == {"CUSTOM_PHYS", "CUSTOM_GOLD", "CUSTOM_BAD"}


@pytest.mark.parametrize("query, minor, code, why", [
    ("resources=VCPU:1&required=CUSTOM_X", 16, "undefined_code", "'required' unexpected"),
    ("resources=VCPU:1&required=!CUSTOM_X", 21, "bad_value", "Expected 'required'"),
    ("resources=VCPU:1&required=in:CUSTOM_X", 38, "bad_value", "only supported since microversion 1.39"),
    ("resources=VCPU:1&required=in:CUSTOM_X,", 39, "bad_value", "Got an empty trait in: in:CUSTOM_X,"),
    ("resources=VCPU:1&required=in:CUSTOM_X,!CUSTOM_Y", 39, "bad_value", "does not support forbidden traits"),
    ("resources=VCPU:1&required=CUSTOM_X,,CUSTOM_Y", 39, "bad_value", "HW_CPU_X86_VMX,!CUSTOM_MAGIC."),
    ("resources=VCPU:1&required=CUSTOM_X,!CUSTOM_X", 39, "bad_value", "Conflicting"),
    ("resources=VCPU:1&member_of=nope", 21, "bad_value", "valid UUID"),
    (f"resources=VCPU:1&member_of={A},{B}", 21, "bad_value", "must be prefixed with the 'in:'"),
    (f"resources=VCPU:1&member_of={A}&member_of={B}", 23, "bad_value", "Multiple"),
    (f"resources=VCPU:1&member_of=!{A}", 31, "bad_value", "Forbidden member_of parameters are not supported"),
    (f"resources=VCPU:1&member_of=!in:{A}", 31, "bad_value", "Forbidden member_of parameters are not supported"),
    ("resources=VCPU:1&in_tree=nope", 31, "bad_value", "uuid"),
    ("resources=VCPU:1&resources1=VCPU:1", 24, "undefined_code", "'resources1' unexpected"),
    ("resources_X=VCPU:1", 32, "undefined_code", "unexpected"),
    ("resources1=VCPU:1&resources2=VCPU:1", 25, "missing_value", "group_policy"),
    ("resources1=VCPU:1&group_policy=spread", 25, "bad_value", "group_policy"),
    ("resources=VCPU:1&limit=0", 16, "bad_value", "limit"),
    ("resources=VCPU:1&limit=x", 16, "bad_value", "limit"),
    ("resources=VCPU:1&root_required=CUSTOM_X", 34, "undefined_code", "unexpected"),
    ("resources=VCPU:1&root_required=in:CUSTOM_X", 39, "bad_value", "in:"),
    ("resources=VCPU:1&required1=CUSTOM_X", 35, "bad_value", "must specify resources"),
    ("resources=VCPU:1&required1=CUSTOM_X", 36, "bad_value", "same_subtree"),
    ("resources1=VCPU:1&same_subtree=1,2", 36, "bad_value", "same_subtree"),
    ("required=CUSTOM_X", 39, "missing_value", "at least one resources"),
    ("", 39, "missing_value", "at least one resources"),
    ("resources=", 39, "bad_value", "Badly formed"),
])
def test_bad(query, minor, code, why):
    with pytest.raises(errors.InvalidInput, match=why) as caught:
        parsed(query, minor)
    assert caught.value.code == ("invalid_input" if code == "undefined_code" else f"placement.query.{code}")
