"""The Hugging Face training step of the comparison: model, batch, loss and AdamW (`compare_hf`).

The `transformers` model is built from the config our interop writes for the same model
(`describe_model`'s `hf_config`: `hf_bert` / `bert_encoder_config.external_config`,
`hf_modernbert.hf_config`), so the sizes are stated once. BERT: `BertForPreTraining` as shipped
computes the vocabulary logits at all `seq_length` positions (ALL); the MASKED variant gathers
the masked positions before `cls.predictions` as ours does (like for like). ModernBERT:
`ModernBertForMaskedLM` with `sparse_prediction` (the masked positions only). AdamW is
`torch.optim.AdamW(fused=True)`, transformers' Trainer default. PyTorch and transformers (the
test extra) are imported inside the functions: they load in the PyTorch child only.

Example:
  model = hf_model(description)
  loss = hf_loss_fn(model, description, MASKED)(synthetic_batch(description))
"""

from typing import Any, Callable, Dict

from official.benchmark.hf_shared import ALL, SEED


def hf_model(description: Dict[str, Any]) -> Any:
  """The `transformers` model of `describe_model`'s description (float32, training mode).

  `BertForPreTraining` (or `BertForMaskedLM` without a next-sentence head) and
  `ModernBertForMaskedLM` with `sparse_prediction`, built from `hf_config`.

  Args:
    description: `hf_ours.describe_model`'s description.

  Example:
    >>> type(hf_model(description)).__name__
    'BertForPreTraining'
  """
  # Function-level: PyTorch loads in its child only (test extra; our runtime never imports it).
  import transformers
  values = {k: v for k, v in description['hf_config'].items()
            if k not in ('model_type', 'architectures')}
  if description['family'] == 'modernbert':
    model = transformers.ModernBertForMaskedLM(
        transformers.ModernBertConfig(sparse_prediction=True, **values))
  else:
    config = transformers.BertConfig(**values)
    model = (transformers.BertForPreTraining(config) if description['next_sentence']
             else transformers.BertForMaskedLM(config))
  return model.train()


def synthetic_batch(description: Dict[str, Any], seed: int = SEED) -> Dict[str, Any]:
  """Random token ids, `masked_positions` distinct sorted positions a row and their labels.

  Args:
    description: `describe_model`'s description (`batch_size`, `seq_length`,
      `masked_positions`, `hf_config['vocab_size']`).
    seed: of the random ids and positions.

  Returns:
    torch tensors: `input_ids`, `attention_mask` (ones), `token_type_ids` (zeros) [batch, seq];
    `positions`, `masked_ids` [batch, predictions]; `labels` [batch, seq] (-100 except at the
    positions); `next_sentence` [batch] in {0, 1}.

  Example:
    >>> synthetic_batch(description)['positions'].shape  # [batch, masked_positions]
  """
  # Function-level: as `hf_model`.
  import torch
  batch, seq = description['batch_size'], description['seq_length']
  vocab = description['hf_config']['vocab_size']
  generator = torch.Generator().manual_seed(seed)
  ids = torch.randint(0, vocab, (batch, seq), generator=generator)
  scores = torch.rand(batch, seq, generator=generator)
  positions = scores.topk(description['masked_positions'], dim=1).indices.sort(dim=1).values
  masked_ids = ids.gather(1, positions)
  labels = torch.full_like(ids, -100).scatter(1, positions, masked_ids)
  return dict(input_ids=ids, attention_mask=torch.ones_like(ids),
              token_type_ids=torch.zeros_like(ids), positions=positions, masked_ids=masked_ids,
              labels=labels, next_sentence=torch.randint(0, 2, (batch,), generator=generator))


def hf_loss_fn(model: Any, description: Dict[str, Any], mlm_logits: str) -> Callable:
  """loss(batch) of one training step: masked LM (+ next sentence), as a scalar tensor.

  Args:
    model: `hf_model`'s model.
    description: `describe_model`'s description.
    mlm_logits: ALL (BERT: `BertForPreTraining`'s own loss, logits at every position) or MASKED
      (BERT: the masked positions gathered before `cls.predictions`; ModernBERT: always, by
      `sparse_prediction`).

  Example:
    >>> hf_loss_fn(model, description, MASKED)(synthetic_batch(description)).backward()
  """
  # Function-level: as `hf_model`.
  import torch
  cross_entropy = torch.nn.functional.cross_entropy
  vocab = description['hf_config']['vocab_size']
  next_sentence = description['next_sentence']

  if description['family'] == 'modernbert':
    def loss(batch):
      return model(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'],
                   labels=batch['labels']).loss
    return loss
  if mlm_logits == ALL:
    def loss(batch):
      extra = {'next_sentence_label': batch['next_sentence']} if next_sentence else {}
      return model(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'],
                   token_type_ids=batch['token_type_ids'], labels=batch['labels'], **extra).loss
    return loss

  def loss(batch):
    out = model.bert(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'],
                     token_type_ids=batch['token_type_ids'])
    hidden = out.last_hidden_state
    index = batch['positions'].unsqueeze(-1).expand(-1, -1, hidden.shape[-1])
    logits = model.cls.predictions(torch.gather(hidden, 1, index))
    total = cross_entropy(logits.reshape(-1, vocab).float(), batch['masked_ids'].reshape(-1))
    if next_sentence:
      total = total + cross_entropy(model.cls.seq_relationship(out.pooler_output).float(),
                                    batch['next_sentence'])
    return total
  return loss


def adamw(model: Any, optimizer: Dict[str, Any]) -> Any:
  """torch's fused AdamW (transformers' Trainer default); no decay on biases and norms.

  Args:
    model: `hf_model`'s model.
    optimizer: `describe_model`'s `optimizer` (learning rate, betas, epsilon, weight decay).

  Example:
    >>> adamw(model, description['optimizer']).step()
  """
  # Function-level: as `hf_model`.
  import torch
  decay, no_decay = [], []
  for name, parameter in model.named_parameters():
    (no_decay if 'bias' in name or 'norm' in name.lower() else decay).append(parameter)
  groups = [{'params': decay, 'weight_decay': optimizer['weight_decay']},
            {'params': no_decay, 'weight_decay': 0.0}]
  return torch.optim.AdamW(groups, lr=optimizer['learning_rate'], betas=optimizer['betas'],
                           eps=optimizer['epsilon'], fused=True)
