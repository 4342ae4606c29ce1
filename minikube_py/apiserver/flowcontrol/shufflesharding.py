"""Shuffle sharding (upstream's apiserver/pkg/util/shufflesharding): a flow's hash picks a
hand of queues out of a deck, so that two flows rarely share all their queues and one
heavy flow cannot fill every queue of its level."""

from __future__ import annotations

import math
from collections.abc import Callable

MAX_HASH_BITS = 60
"""The hash bits a deal may use: with all 64 the last card dealt would be uneven up to
2:3 between the deck's halves; with 60 at most 32:33."""


def required_entropy_bits(deck_size: int, hand_size: int) -> int:
    """RequiredEntropyBits: a slightly conservative count of the hash bits a deal of
    `hand_size` cards from `deck_size` consumes."""
    return math.ceil(math.log2(deck_size) * hand_size)


class Dealer:
    """Deals hands of `hand_size` distinct cards in [0, deck_size) from a hash value."""

    def __init__(self, deck_size: int, hand_size: int) -> None:
        """NewDealer: refuses sizes it cannot deal fairly (ValueError, upstream's text)."""
        if deck_size <= 0 or hand_size <= 0:
            raise ValueError(f"deckSize {deck_size} or handSize {hand_size} is not positive")
        if hand_size > deck_size:
            raise ValueError(f"handSize {hand_size} is greater than deckSize {deck_size}")
        if deck_size > 1 << 26:
            raise ValueError(f"deckSize {deck_size} is impractically large")
        if required_entropy_bits(deck_size, hand_size) > MAX_HASH_BITS:
            raise ValueError(f"required entropy bits of deckSize {deck_size} and handSize "
                             f"{hand_size} is greater than {MAX_HASH_BITS}")
        self.deck_size = deck_size
        self.hand_size = hand_size

    def deal(self, hash_value: int, pick: Callable[[int], None]) -> None:
        """Deal: the hash read as mixed-radix digits (deck, deck-1, ...), each digit the
        index of a card among those not yet dealt; `pick` is called once per card."""
        remainders: list[int] = []
        for i in range(self.hand_size):
            hash_value, remainder = divmod(hash_value, self.deck_size - i)
            remainders.append(remainder)
        for i, card in enumerate(remainders):
            for j in range(i, 0, -1):
                if card >= remainders[j - 1]:
                    card += 1
            pick(card)

    def deal_into_hand(self, hash_value: int) -> list[int]:
        """DealIntoHand: the dealt cards, in the order dealt."""
        hand: list[int] = []
        self.deal(hash_value, hand.append)
        return hand
