"""``units.shorten``, which every view uses to keep a value or a signature on one bounded line:
never longer than its limit, the text's own start kept, an ellipsis where anything was cut, and a
word or name cut in the middle only where no boundary lies near the end."""

from hypothesis import given
from hypothesis import strategies as st

from jaxmagic.words.units import shorten


@given(st.text(), st.integers(min_value=2, max_value=200))
def test_the_cut_is_bounded_and_keeps_the_start(text, limit):
    one_line = " ".join(text.split())
    cut = shorten(text, limit)
    assert len(cut) <= limit
    if len(one_line) <= limit:
        assert cut == one_line
    else:
        assert cut.endswith("…") and one_line.startswith(cut[:-1].rstrip())


@given(st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=2, max_size=30), st.integers(30, 80))
def test_words_are_cut_whole_where_a_space_lies_near_the_end(words, limit):
    """Words of at most 8 letters: a space lies in every 9 characters, so within the last two
    fifths of any limit from 30 on: the cut ends after a whole word."""
    text = " ".join(words)
    cut = shorten(text, limit)
    if cut != text:
        assert cut.endswith(" …"), cut
        assert cut[:-2].split() == words[: len(cut[:-2].split())]  # whole words only
