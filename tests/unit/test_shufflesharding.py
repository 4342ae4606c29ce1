"""The shuffle-sharding Dealer: upstream's shufflesharding_test.go cases, ported. The
uniform-distribution cases use smaller decks than upstream's (64/128/50 cards take
millions of deals, minutes in Python) with the same construction and bound."""

from __future__ import annotations

import math
import random

import pytest

from minikube_py.apiserver.flowcontrol.shufflesharding import (
    MAX_HASH_BITS,
    Dealer,
    required_entropy_bits,
)


@pytest.mark.parametrize(("deck_size", "hand_size", "bits"), [(1024, 6, 60), (512, 8, 72)])
def test_required_entropy_bits(deck_size: int, hand_size: int, bits: int) -> None:
    assert required_entropy_bits(deck_size, hand_size) == bits


@pytest.mark.parametrize(("deck_size", "hand_size", "error"), [
    (-100, 8, "deckSize -100 or handSize 8 is not positive"),
    (100, 0, "deckSize 100 or handSize 0 is not positive"),
    (100, 101, "handSize 101 is greater than deckSize 100"),
    (1 << 27, 2, "deckSize 134217728 is impractically large"),
    (512, 8, "required entropy bits of deckSize 512 and handSize 8 is greater than 60"),
])
def test_new_dealer_refuses_what_it_cannot_deal(deck_size: int, hand_size: int,
                                                error: str) -> None:
    with pytest.raises(ValueError) as raised:
        Dealer(deck_size, hand_size)
    assert str(raised.value) == error


def test_new_dealer_accepts_1024_cards_hands_of_6() -> None:
    assert Dealer(1024, 6).hand_size == 6


@pytest.mark.parametrize(("deck_size", "hand_size"), [
    (4, 4), (8, 8), (10, 10), (12, 12), (128, 8), (256, 7), (512, 6)])
def test_a_hand_has_hand_size_distinct_cards_of_the_deck(deck_size: int,
                                                          hand_size: int) -> None:
    hand = Dealer(deck_size, hand_size).deal_into_hand(random.getrandbits(64))
    assert len(hand) == hand_size
    assert len(set(hand)) == hand_size
    assert all(0 <= card < deck_size for card in hand)


def falling_factorial(n: int, m: int) -> int:
    """n! / (n-m)!"""
    return math.prod(range(n - m + 1, n + 1))


@pytest.mark.parametrize(("deck_size", "hand_size", "hash_max"), [
    (8, 3, 1 << (math.ceil(math.log2(falling_factorial(8, 3))) + 64 - MAX_HASH_BITS)),
    (16, 3, falling_factorial(16, 3)),
    (10, 4, falling_factorial(10, 4)),
])
def test_every_hand_is_dealt_equally_often(deck_size: int, hand_size: int,
                                           hash_max: int) -> None:
    dealer = Dealer(deck_size, hand_size)
    counts: dict[tuple[int, ...], int] = {}
    for hash_value in range(hash_max):
        hand = tuple(sorted(dealer.deal_into_hand(hash_value)))
        counts[hand] = counts.get(hand, 0) + 1
    permutations = math.factorial(hand_size)
    deals_per_ordered_hand = hash_max / falling_factorial(deck_size, hand_size)
    low = permutations * math.floor(deals_per_ordered_hand)
    high = permutations * math.ceil(deals_per_ordered_hand)
    assert len(counts) == falling_factorial(deck_size, hand_size) // permutations
    assert all(low <= count <= high for count in counts.values()), (low, high)


def test_deal_calls_pick_once_per_card_in_dealing_order() -> None:
    dealer = Dealer(6, 6)
    picked: list[int] = []
    dealer.deal(0, picked.append)
    assert picked == dealer.deal_into_hand(0)
    assert sorted(picked) == list(range(6))
