"""An independent numpy BERT forward pass, for checking the TensorFlow layers against it."""

import numpy as np


def gelu_tanh(x):
  return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def attention(x, mask, w):
  """w: dict of query/key/value kernels [h, n, d] and biases [n, d], output kernel [n, d, h],
  bias."""
  q = np.einsum('bsh,hnd->bsnd', x, w['query/kernel']) + w['query/bias']
  k = np.einsum('bsh,hnd->bsnd', x, w['key/kernel']) + w['key/bias']
  v = np.einsum('bsh,hnd->bsnd', x, w['value/kernel']) + w['value/bias']
  scores = np.einsum('bqnd,bknd->bnqk', q, k) / np.sqrt(q.shape[-1])
  scores = scores + (1.0 - mask[:, None, None, :]) * -1e9
  context = np.einsum('bnqk,bknd->bqnd', softmax(scores), v)
  return np.einsum('bqnd,ndh->bqh', context, w['attention_output/kernel']) + w[
      'attention_output/bias']


def transformer_block(x, mask, w, norm_first=False):
  """w: attention weights plus the dense and LayerNorm weights of one block."""
  if norm_first:
    h = x + attention(layer_norm(x, *w['self_attention_layer_norm']), mask, w)
    inner = gelu_tanh(layer_norm(h, *w['output_layer_norm']) @ w['intermediate'][0] +
                      w['intermediate'][1])
    return h + inner @ w['output'][0] + w['output'][1]
  h = layer_norm(x + attention(x, mask, w), *w['self_attention_layer_norm'])
  inner = gelu_tanh(h @ w['intermediate'][0] + w['intermediate'][1])
  return layer_norm(h + inner @ w['output'][0] + w['output'][1], *w['output_layer_norm'])


def attention_weights(layer):
  """Reads a MultiHeadSelfAttention's weights into the dict `attention` expects."""
  w = {}
  for name, dense in (('query', layer._query_dense), ('key', layer._key_dense),  # pylint: disable=protected-access
                      ('value', layer._value_dense), ('attention_output', layer._output_dense)):  # pylint: disable=protected-access
    w[f'{name}/kernel'], w[f'{name}/bias'] = dense.kernel.numpy(), dense.bias.numpy()
  return w


def block_weights(block):
  """Reads a TransformerEncoderBlock's weights into the dict `transformer_block` expects."""
  # pylint: disable=protected-access
  w = attention_weights(block._attention_layer)
  w['self_attention_layer_norm'] = [v.numpy() for v in block._attention_layer_norm.weights]
  w['output_layer_norm'] = [v.numpy() for v in block._output_layer_norm.weights]
  w['intermediate'] = [v.numpy() for v in block._intermediate_dense.weights]
  w['output'] = [v.numpy() for v in block._output_dense.weights]
  return w


def encoder_forward(encoder, word_ids, mask, type_ids, norm_first=False):
  """sequence_output and pooled_output of a BertEncoder computed in numpy from its weights."""
  word = encoder.get_embedding_table().numpy()[word_ids]
  position = encoder._position_embedding_layer.embeddings.numpy()[:word_ids.shape[1]]  # pylint: disable=protected-access
  types = encoder._type_embedding_layer.embeddings.numpy()[type_ids]  # pylint: disable=protected-access
  gamma, beta = [v.numpy() for v in encoder._embedding_norm_layer.weights]  # pylint: disable=protected-access
  x = layer_norm(word + position[None] + types, gamma, beta)
  # Only when embedding_width != hidden.
  if getattr(encoder, '_embedding_projection', None) is not None:
    kernel, bias = [v.numpy() for v in encoder._embedding_projection.weights]  # pylint: disable=protected-access
    x = x @ kernel + bias
  for block in encoder.transformer_layers:
    x = transformer_block(x, mask.astype(np.float32), block_weights(block), norm_first)
  if norm_first:
    x = layer_norm(x, *[v.numpy() for v in encoder._final_layer_norm.weights])  # pylint: disable=protected-access
  kernel, bias = [v.numpy() for v in encoder.pooler_layer.weights]
  return x, np.tanh(x[:, 0] @ kernel + bias)
