"""Small containers that keep selectors O(1) / O(log N) per operation.

* ``IndexedSet``: insertion, removal and uniform random choice in O(1) (swap-remove), with an
  order that is part of the saved state, so a resumed run draws exactly the same elements.
* ``LazyMinHeap``: a min-heap of (key, item) with lazy deletion: removing an item is O(1)
  (it is only forgotten), and stale heap entries are skipped when they reach the top.
"""
from __future__ import annotations

import heapq
from typing import Callable, Generic, Hashable, Iterable, Iterator, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


class IndexedSet(Generic[K]):
    __slots__ = ("_items", "_pos")

    def __init__(self, items: Iterable[K] = ()):
        self._items: list[K] = []
        self._pos: dict[K, int] = {}
        for item in items:
            self.add(item)

    def add(self, item: K) -> bool:
        if item in self._pos:
            return False
        self._pos[item] = len(self._items)
        self._items.append(item)
        return True

    def discard(self, item: K) -> bool:
        i = self._pos.pop(item, None)
        if i is None:
            return False
        last = self._items.pop()
        if i < len(self._items):  # move the last element into the hole
            self._items[i] = last
            self._pos[last] = i
        return True

    def choice(self, rng: np.random.Generator) -> K:
        if not self._items:
            raise IndexError("choice from an empty set")
        return self._items[int(rng.integers(len(self._items)))]

    def to_list(self) -> list[K]:
        return list(self._items)

    def __contains__(self, item: object) -> bool:
        return item in self._pos

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)


class LazyMinHeap(Generic[K]):
    """Min-heap of items by a key fixed at push time; ``discard`` is O(1) (lazy).

    Keys must be unique per item and totally ordered (e.g. (fitness, id)), so that the pop
    order does not depend on the heap's internal layout: a heap rebuilt from the live items
    after a resume pops in exactly the same order.
    """

    __slots__ = ("_heap", "_live")

    def __init__(self) -> None:
        self._heap: list[tuple[tuple, K]] = []
        self._live: dict[K, tuple] = {}

    def push(self, key: tuple, item: K) -> None:
        if item in self._live:
            raise ValueError(f"item {item!r} already in the heap")
        self._live[item] = key
        heapq.heappush(self._heap, (key, item))

    def discard(self, item: K) -> None:
        self._live.pop(item, None)

    def _clean(self) -> None:
        heap, live = self._heap, self._live
        while heap and live.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        # Stale entries are bounded by the number of discards; compact when they dominate.
        if len(heap) > 64 and len(heap) > 4 * len(live):
            self._heap = [(k, i) for i, k in live.items()]
            heapq.heapify(self._heap)

    def peek(self) -> tuple[tuple, K]:
        self._clean()
        if not self._heap:
            raise IndexError("peek at an empty heap")
        return self._heap[0]

    def pop(self) -> tuple[tuple, K]:
        self._clean()
        if not self._heap:
            raise IndexError("pop from an empty heap")
        key, item = heapq.heappop(self._heap)
        del self._live[item]
        return key, item

    def pop_first(self, skip: Callable[[K], bool]) -> tuple[tuple, K] | None:
        """Pop the smallest item for which ``skip`` is false; skipped items stay in."""
        held: list[tuple[tuple, K]] = []
        found = None
        while self._live:
            key, item = self.pop()
            if skip(item):
                held.append((key, item))
                continue
            found = (key, item)
            break
        for key, item in held:
            self.push(key, item)
        return found

    def smallest(self, k: int) -> list[tuple[tuple, K]]:
        """The k smallest live items, in order, left in the heap: O(k log N)."""
        out = [self.pop() for _ in range(min(k, len(self._live)))]
        for key, item in out:
            self.push(key, item)
        return out

    def __contains__(self, item: object) -> bool:
        return item in self._live

    def __len__(self) -> int:
        return len(self._live)
