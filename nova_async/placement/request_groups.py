"""The query string of `GET /allocation_candidates`, turned into request groups.

Placement's request is a set of groups: the unnumbered one (`resources`, `required`,
`member_of`, `in_tree`), whose resources may come from several providers of one tree, and
suffixed ones (`resources1`, `required_NIC`, ...), each satisfied by exactly one provider.
Which parameters exist, and which syntax they accept, depends on the microversion; parsing
it all here, into plain frozen data, keeps the search (`tree_candidates`) free of HTTP and
lets unit tests cover every rule without a database."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nova_async.common import errors
from nova_async.common.web import ascii_int, parse_uuid
from nova_async.placement.candidates import MAX_AMOUNT, parse_resources

BAD = "placement.query.bad_value"
MISSING = "placement.query.missing_value"
_NUMBERED = re.compile(r"^[1-9][0-9]*$")
_ANY_SUFFIX = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_GROUP_PARAM = re.compile(r"^(resources|required|member_of|in_tree)(.*)$")


@dataclass(frozen=True)
class RequestGroup:
    """One group. `required` is a list of any-of sets (a plain trait is a set of one);
    `member_of` likewise for aggregates; both ANDed across their items."""

    suffix: str = ""
    resources: dict[str, int] = field(default_factory=dict)
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    not_member_of: frozenset[str] = frozenset()
    in_tree: str | None = None

    @property
    def trait_names(self) -> set[str]:
        return set().union(*self.required, self.forbidden)


@dataclass(frozen=True)
class CandidateRequest:
    groups: tuple[RequestGroup, ...]
    group_policy: str = "none"
    limit: int | None = None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    same_subtree: tuple[tuple[str, ...], ...] = ()

    @property
    def unnumbered(self) -> RequestGroup | None:
        return next((g for g in self.groups if g.suffix == ""), None)

    @property
    def suffixed(self) -> list[RequestGroup]:
        return [g for g in self.groups if g.suffix != ""]

    @property
    def trait_names(self) -> set[str]:
        return set().union(self.root_required, self.root_forbidden, *(g.trait_names for g in self.groups))


def _bad(message: str, code: str = BAD) -> errors.InvalidInput:
    return errors.InvalidInput(message, code=code)


def _unexpected(names: list[str]) -> errors.InvalidInput:
    return errors.InvalidInput("Invalid query string parameters: Additional properties are not "
                               f"allowed ({', '.join(repr(n) for n in sorted(names))} unexpected)")


def parse_traits(values: list[str], minor: int, param: str) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    """`required` values → (any-of sets that must each be met, forbidden traits), as upstream
    reads them for providers and candidates alike: a comma list (`!` forbids, 1.22+; every
    leading `!` is stripped, a quirk upstream keeps) or an `in:` list (1.39+). Names are not
    checked here: one that does not exist is refused by the lookup ("No such trait(s)").
    Upstream's messages say 'required' whatever the parameter is called."""
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    may_forbid = minor >= 22
    for value in values:
        if value.startswith("in:"):
            if minor < 39:
                raise _bad("Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "
                           f"only supported since microversion 1.39. Got: {value}")
            names = {n.strip() for n in value[3:].split(",")}
            if not all(names):
                raise _bad("Invalid query string parameters: Expected 'required' parameter value of "
                           f"the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: {value}")
            if any(n.startswith("!") for n in names):
                raise _bad("Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "
                           f"does not support forbidden traits. Got: {value}")
            required.append(frozenset(names))
            continue
        names = [n.strip() for n in value.split(",")]
        negated = {n.lstrip("!") for n in names if n.startswith("!")}
        if not all(names) or not all(negated):
            form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if may_forbid else "HW_CPU_X86_VMX,CUSTOM_MAGIC"
            raise _bad("Invalid query string parameters: Expected 'required' parameter value of the "
                       f"form: {form}. Got an empty trait in: {value}")
        if negated and not may_forbid:
            raise _bad("Invalid query string parameters: Expected 'required' parameter value of the "
                       f"form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}")
        required.extend(frozenset([n]) for n in names if not n.startswith("!"))
        forbidden |= negated
    return tuple(required), frozenset(forbidden)


def _refuse_conflicts(required: tuple[frozenset[str], ...], forbidden: frozenset[str], param: str) -> None:
    """A candidate request may not both require and forbid one trait."""
    both = sorted(forbidden & set().union(*(s for s in required if len(s) == 1)))
    if both:
        raise _bad(f"Conflicting required and forbidden traits found in '{param}': {', '.join(both)}")


def parse_member_of(values: list[str], minor: int, param: str) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    """`member_of` values → (any-of aggregate sets, aggregates the provider must not be in).
    One UUID, or `in:` several, either negated with `!` (1.32+); several parameters from 1.24.
    Checked in upstream's order (the form, every UUID, then the version) and words, as both
    `GET /resource_providers` and `GET /allocation_candidates` answer them."""
    wanted: list[frozenset[str]] = []
    excluded: set[str] = set()
    if len(values) > 1 and minor < 24:
        raise _bad(f"Multiple {param} parameters are not supported")
    for value in values:
        if "," in value and not value.startswith(("in:", "!in:")):
            raise _bad(f"Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "
                       f"keyword using the valid microversion. Got: {value}")
        negate = value.startswith("!")
        body = value[1:] if negate else value
        uuids = []
        for text in (body[3:] if body.startswith("in:") else body).split(","):
            found = parse_uuid(text)
            if found is None:
                raise _bad(f"Invalid query string parameters: Expected 'member_of' parameter to "
                           f"contain valid UUID(s). Got: {text}")
            uuids.append(found)
        if negate and minor < 32:
            raise _bad(f"Forbidden {param} parameters are not supported in the specified microversion")
        if negate:
            excluded.update(uuids)
        else:
            wanted.append(frozenset(uuids))
    return tuple(wanted), frozenset(excluded)


def _suffix_ok(suffix: str, minor: int) -> bool:
    if suffix == "":
        return True
    if minor >= 33:
        return bool(_ANY_SUFFIX.match(suffix))
    return minor >= 25 and bool(_NUMBERED.match(suffix))


def parse(query: dict[str, list[str]], minor: int) -> CandidateRequest:
    """Every parameter of the query (name → its values, in order) at microversion 1.`minor`."""
    plain = {"limit": 16, "group_policy": 25, "root_required": 35, "same_subtree": 36}
    since = {"resources": 10, "required": 17, "member_of": 21, "in_tree": 31}
    by_suffix: dict[str, dict[str, list[str]]] = {}
    unexpected: list[str] = []
    for name, values in query.items():
        if name in plain:
            if minor < plain[name]:
                unexpected.append(name)
            continue
        match = _GROUP_PARAM.match(name)
        if not match or minor < since[match[1]] or not _suffix_ok(match[2], minor):
            unexpected.append(name)
            continue
        by_suffix.setdefault(match[2], {})[match[1]] = values
    if unexpected:
        raise _unexpected(unexpected)

    groups: list[RequestGroup] = []
    for suffix, params in by_suffix.items():
        resources: dict[str, int] = {}
        for text in params.get("resources", []):
            if resources:
                raise _bad(f"Parameter resources{suffix} may only be given once.")
            resources = parse_resources(text)
        required, forbidden = parse_traits(params.get("required", []), minor, f"required{suffix}")
        _refuse_conflicts(required, forbidden, f"required{suffix}")
        member_of, not_member_of = parse_member_of(params.get("member_of", []), minor, f"member_of{suffix}")
        in_tree = None
        if "in_tree" in params:
            in_tree = parse_uuid(params["in_tree"][-1])
            if in_tree is None:
                raise _bad(f"Invalid query string parameters: Expected 'in_tree{suffix}' parameter "
                           f"to be a format of uuid. Got: {params['in_tree'][-1]}")
        groups.append(RequestGroup(suffix, resources, required, forbidden, member_of, not_member_of, in_tree))

    if not any(g.resources for g in groups):
        raise _bad("There must be at least one resources or resources[$S] parameter.", MISSING)

    same_subtree: list[tuple[str, ...]] = []
    known = {g.suffix for g in groups if g.suffix}
    for value in query.get("same_subtree", []):
        suffixes = tuple(s.strip() for s in value.split(","))
        missing = [s for s in suffixes if s not in known]
        if missing:
            raise _bad(f"Real suffixes should be specified in same_subtree: {missing} not found in "
                       f"request groups.")
        same_subtree.append(suffixes)
    in_subtree = {s for group in same_subtree for s in group}
    for g in groups:
        if g.suffix and not g.resources:
            if minor < 36:
                raise _bad(f"All request groups must specify resources (resources{g.suffix}).")
            if g.suffix not in in_subtree:
                raise _bad("Resourceless suffixed group request should be specified in "
                           f"`same_subtree` query param: {g.suffix!r}.")

    policy = (query.get("group_policy") or ["none"])[-1] if minor >= 25 else "none"
    if policy not in ("none", "isolate"):
        raise _bad(f"Invalid query string parameters: 'group_policy' must be 'none' or 'isolate', "
                   f"got {policy!r}.")
    if "group_policy" not in query and sum(1 for g in groups if g.suffix and g.resources) > 1:
        raise _bad('The "group_policy" parameter is required when specifying more than one '
                   '"resources{N}" parameter.', MISSING)

    limit = None
    if "limit" in query:
        raw = query["limit"][-1]
        limit = ascii_int(raw)
        if limit is None or not 1 <= limit <= MAX_AMOUNT:  # bound: it reaches SQL as an int4
            raise _bad(f"Invalid query string parameters: 'limit' must be an integer from 1 to "
                       f"{MAX_AMOUNT}, got {raw!r}.")

    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    if "root_required" in query:
        values = query["root_required"]
        if any(v.startswith("in:") for v in values):
            raise _bad("Invalid query string parameters: root_required does not take in: lists.")
        sets, root_forbidden = parse_traits(values, minor, "root_required")
        _refuse_conflicts(sets, root_forbidden, "root_required")
        root_required = frozenset(next(iter(s)) for s in sets)

    return CandidateRequest(tuple(sorted(groups, key=lambda g: g.suffix)), policy, limit,
                            root_required, root_forbidden, tuple(same_subtree))
