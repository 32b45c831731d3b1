"""Units: what a window takes or leaves whole.

A *turn* is the unit of the recent window (it never starts mid-turn). Inside a turn
the *atoms* are single events, except that a tool call travels with its results, so
shortening a turn never separates them. Events without a turn id (legacy data) are
atoms of their own, again with tool calls and results kept together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentctx.events import Event, EventType
from agentctx.tool_links import answered_calls

# Enum members bound once: ``EventType.X`` is a class attribute lookup through the enum
# machinery, measurable in loops that run for every event of a build.
_TOOL_CALL = EventType.TOOL_CALL
_CALL_JOINS = frozenset({EventType.TOOL_CALL, EventType.AGENT_RESPONSE})


@dataclass
class Atom:
    """One event, or a tool call with its results: never split."""

    events: list[Event]

    @property
    def first_seq(self) -> int:
        return self.events[0].seq

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq


@dataclass
class Unit:
    """A turn (or a legacy atom): the recent window adds or drops it whole."""

    turn_id: str | None
    atoms: list[Atom] = field(default_factory=list)

    @property
    def events(self) -> list[Event]:
        return [event for atom in self.atoms for event in atom.events]

    @property
    def first_seq(self) -> int:
        return self.atoms[0].first_seq

    @property
    def last_seq(self) -> int:
        return self.atoms[-1].last_seq


def atoms_of(events: Sequence[Event]) -> list[Atom]:
    """Events (in seq order) grouped into atoms: tool calls gather their results.

    A run of adjacent tool calls (parallel calls), the assistant message right before
    them, and the results that follow them form one atom. A result whose call is not
    among ``events`` stays alone; a result answers the latest unanswered call with its id
    (:mod:`agentctx.tool_links`).
    """
    answers = answered_calls(events)  # result seq -> call seq
    atoms: list[Atom] = []
    atom_of_call: dict[int, Atom] = {}  # call seq -> the atom holding it
    for event in events:
        if event.type is _TOOL_CALL:
            last = atoms[-1] if atoms else None
            if (
                last is not None
                and last.events[-1].type in _CALL_JOINS
                and _same_turn(last.events[-1], event)
            ):
                # Parallel calls share one atom, and calls join the assistant message
                # they came with (one message of the model, text and calls).
                last.events.append(event)
                atom = last
            else:
                atom = Atom([event])
                atoms.append(atom)
            atom_of_call[event.seq] = atom
            continue
        call = answers.get(event.seq)
        atom_found = atom_of_call.get(call) if call is not None else None
        if atom_found is not None:
            if atom_found is atoms[-1]:
                atom_found.events.append(event)
                continue
            # Something else came between the call and its result: merge them, and
            # everything in between, into one atom so the pair is never split.
            index = next(i for i, a in enumerate(atoms) if a is atom_found)
            merged = Atom([e for a in atoms[index:] for e in a.events] + [event])
            gone = {id(a) for a in atoms[index:]}
            del atoms[index:]
            atoms.append(merged)
            for seq, owner in list(atom_of_call.items()):
                if id(owner) in gone:
                    atom_of_call[seq] = merged
            continue
        atoms.append(Atom([event]))
    return atoms


def units_of(events: Sequence[Event]) -> list[Unit]:
    """Events (in seq order) grouped into units, oldest first."""
    units: list[Unit] = []
    for atom in atoms_of(events):
        turn_id = atom.events[0].turn_id
        if turn_id is not None and units and units[-1].turn_id == turn_id:
            units[-1].atoms.append(atom)
        else:
            units.append(Unit(turn_id, [atom]))
    return units


def _same_turn(a: Event, b: Event) -> bool:
    return a.turn_id == b.turn_id


_NO_MESSAGE = frozenset({EventType.STATE_DELTA, EventType.SUMMARY})


def message_count(unit: Unit) -> int:
    """The chat messages a turn shows: state changes and summaries show none, and tool
    calls share the message of the assistant text or calls right before them."""
    count = 0
    before: Event | None = None
    for event in unit.events:
        if event.type in _NO_MESSAGE:
            continue
        joins = event.type is _TOOL_CALL and before is not None and before.type in _CALL_JOINS
        count += not joins
        before = event
    return count
