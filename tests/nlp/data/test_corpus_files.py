"""Deduplication of the evaluation splits: exact and normalised repeats, across and within
splits, for sentence and tagged examples."""

import copy

import pytest

from official.nlp.data import corpus_files


@pytest.mark.parametrize('text, expected', [
    ("It's  a GOOD film!", 'it s a good film'),
    ('  Tabs\tand\nnewlines ', 'tabs and newlines'),
    ('Café, 1999 -- naïve.', 'café 1999 naïve'),
    ('...', ''),
])
def test_normalized_text_lowercases_and_keeps_only_letters_and_digits(text, expected):
  assert corpus_files.normalized_text(text) == expected


def test_a_repeat_is_dropped_from_the_later_split_exact_or_normalised():
  splits = {
      'train': [('The film was good.', 'pos'), ('A dull plot!', 'neg')],
      'dev': [('the film  was GOOD', 'pos'),  # normalised repeat of train
              ('New one.', 'neg'),
              ('New one.', 'neg'),  # exact repeat within dev
              ('Another.', 'pos')],
      'test': [('A dull plot!', 'neg'),  # exact repeat of train
               ('a dull plot', 'pos'),  # normalised, even with another label
               ('Unseen here.', 'pos'),
               ('new one', 'pos'),  # normalised repeat of dev
               ('Last.', 'neg')],
  }
  before = copy.deepcopy(splits)
  kept, dropped = corpus_files.deduplicate_splits(splits)
  assert kept == {'train': before['train'],
                  'dev': [('New one.', 'neg'), ('Another.', 'pos')],
                  'test': [('Unseen here.', 'pos'), ('Last.', 'neg')]}
  assert dropped == {'train': 0, 'dev': 2, 'test': 3}
  assert splits == before  # the input is not changed
  keys = [{corpus_files.normalized_text(t) for t, _ in part} for part in kept.values()]
  assert not (keys[0] & keys[1] or keys[0] & keys[2] or keys[1] & keys[2])


def test_tagged_sentences_compare_their_words_joined():
  splits = {'train': [(['The', 'film', '.'], ['DT', 'NN', '.'])],
            'dev': [],
            'test': [(['the', 'film'], ['DT', 'NN']),  # the same words, normalised
                     (['The', 'film', 'ends', '.'], ['DT', 'NN', 'VBZ', '.'])]}
  kept, dropped = corpus_files.deduplicate_splits(splits)
  assert kept['test'] == [(['The', 'film', 'ends', '.'], ['DT', 'NN', 'VBZ', '.'])]
  assert dropped == {'train': 0, 'dev': 0, 'test': 1}


def test_the_split_order_given_decides_which_copy_stays():
  kept, dropped = corpus_files.deduplicate_splits({'test': [('Same.', 'a')],
                                                   'train': [('same', 'a')]})
  assert kept == {'test': [('Same.', 'a')], 'train': []}
  assert dropped == {'test': 0, 'train': 1}
