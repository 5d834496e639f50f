"""Serving: export SavedModels (`export_savedmodel`); inference from any model dir (`inference`).

Model Garden's export-module API is there too: `serving_modules` (`SentencePrediction`, `MaskedLM`,
`Tagging`), `export_savedmodel.lookup_export_module(task)` / `create_export_module(...)` and
`export_savedmodel_util.export(module, function_keys, export_dir, checkpoint_path=...)`.

Example:
  >>> from official.nlp.serving import export_savedmodel
  >>> export_savedmodel.export_from_model_dir('runs/tiny', 'exports/tiny')
  >>> loaded = tf.saved_model.load('exports/tiny')
  >>> loaded.signatures['fill_mask'](input_word_ids=..., input_mask=..., input_type_ids=...,
  ...                                masked_lm_positions=...)['top_k_ids']
"""
