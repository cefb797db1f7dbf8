# SPDX-License-Identifier: LGPL-2.1-or-later
"""txl convert --hf: small Hugging Face style checkpoints built here with
numpy, converted by the real binary ($TXL_BIN), the output read back with a
minimal GGUF reader.  Refusals must exit non-zero and name the problem."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'reference'))
from safetensors_io import write_safetensors  # noqa: E402

TXL = os.environ.get('TXL_BIN', 'txl')
TMP = tempfile.mkdtemp(prefix='txl-convert-')

# ---- checkpoints ------------------------------------------------------------


def config(**kw):
    c = {
        'model_type': 'transfo-xl', 'architectures': ['TransfoXLLMHeadModel'],
        'vocab_size': 40, 'cutoffs': [10, 20], 'd_model': 16, 'd_embed': 16,
        'n_head': 2, 'd_head': 8, 'd_inner': 24, 'n_layer': 2, 'div_val': 2,
        'mem_len': 8, 'tgt_len': 4, 'clamp_len': -1, 'same_length': True,
        'pre_lnorm': False, 'untie_r': True, 'tie_word_embeddings': True,
        'tie_projs': [False, True, True], 'layer_norm_epsilon': 1e-5,
        'attn_type': 0, 'sample_softmax': -1, 'adaptive': True,
        'dropout': 0.1, 'eos_token_id': 0,
    }
    c.update(kw)
    return {k: v for k, v in c.items() if v is not None}


def ties(c):
    """[(emb name, [tied copies])] as TransfoXLLMHeadModel.tie_weights."""
    out = []
    n = len(c['cutoffs']) + 1
    tw = c.get('tie_word_embeddings', c.get('tie_weight', True))
    tp = c.get('tie_projs', [False] + [True] * (n - 1))
    if tw:
        for k in range(1 if c['div_val'] == 1 else n):
            out.append(('transformer.word_emb.emb_layers.%d.weight' % k,
                        ['crit.out_layers.%d.weight' % k]))
    if c['div_val'] == 1 and c['d_model'] != c['d_embed']:
        out.append(('transformer.word_emb.emb_projs.0',
                    ['crit.out_projs.%d' % k for k in range(n) if tp[k]]))
    elif c['div_val'] > 1:
        for k in range(n):
            if tp[k]:
                out.append(('transformer.word_emb.emb_projs.%d' % k,
                            ['crit.out_projs.%d' % k]))
    return [t for t in out if t[1]]


def weights(c, seed=0):
    """Every HF tensor (tied copies as identical arrays)."""
    rng = np.random.default_rng(seed)
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    W = {}
    V = c.get('vocab_size', c.get('n_token'))
    dm, de, H, dh, di = (c['d_model'], c['d_embed'], c['n_head'], c['d_head'],
                         c['d_inner'])
    ends = [0] + c['cutoffs'] + [V]
    C = len(c['cutoffs'])
    if c['div_val'] == 1:
        W['transformer.word_emb.emb_layers.0.weight'] = r(V, de)
        if dm != de:
            W['transformer.word_emb.emb_projs.0'] = r(dm, de)
        W['crit.out_layers.0.weight'] = r(V, de)
        W['crit.out_layers.0.bias'] = r(V)
        if dm != de:
            for k in range(C + 1):
                W['crit.out_projs.%d' % k] = r(dm, de)
    else:
        for k in range(C + 1):
            nk, dk = ends[k + 1] - ends[k], de // c['div_val'] ** k
            W['transformer.word_emb.emb_layers.%d.weight' % k] = r(nk, dk)
            W['transformer.word_emb.emb_projs.%d' % k] = r(dm, dk)
            W['crit.out_layers.%d.weight' % k] = r(nk, dk)
            W['crit.out_layers.%d.bias' % k] = r(nk)
            W['crit.out_projs.%d' % k] = r(dm, dk)
    if C:
        W['crit.cluster_weight'] = r(C, de)
        W['crit.cluster_bias'] = r(C)
    if not c['untie_r']:
        W['transformer.r_w_bias'] = r(H, dh)
        W['transformer.r_r_bias'] = r(H, dh)
    for l in range(c['n_layer']):
        p = 'transformer.layers.%d.' % l
        if c['untie_r']:
            W[p + 'dec_attn.r_w_bias'] = r(H, dh)
            W[p + 'dec_attn.r_r_bias'] = r(H, dh)
        W[p + 'dec_attn.qkv_net.weight'] = r(3 * H * dh, dm)
        W[p + 'dec_attn.r_net.weight'] = r(H * dh, dm)
        W[p + 'dec_attn.o_net.weight'] = r(dm, H * dh)
        W[p + 'dec_attn.layer_norm.weight'] = r(dm)
        W[p + 'dec_attn.layer_norm.bias'] = r(dm)
        W[p + 'pos_ff.CoreNet.0.weight'] = r(di, dm)
        W[p + 'pos_ff.CoreNet.0.bias'] = r(di)
        W[p + 'pos_ff.CoreNet.3.weight'] = r(dm, di)
        W[p + 'pos_ff.CoreNet.3.bias'] = r(dm)
        W[p + 'pos_ff.layer_norm.weight'] = r(dm)
        W[p + 'pos_ff.layer_norm.bias'] = r(dm)
    for emb, copies in ties(c):
        for name in copies:
            W[name] = W[emb]
    return W


def ckpt(name, c, store='emb', edit=None, vocab=None, tok_cfg=None,
         dtype=np.float32):
    """Writes a checkpoint directory; store picks which side of each tie
    is written ('emb', 'out' or 'both'); edit(W) may change the dict."""
    d = os.path.join(TMP, name)
    os.makedirs(d)
    W = weights(c)
    stored = dict(W)
    for emb, copies in ties(c):
        if store == 'emb':
            for n in copies:
                del stored[n]
        elif store == 'out':
            del stored[emb]
    if edit:
        edit(stored)
    write_safetensors(os.path.join(d, 'model.safetensors'),
                      {k: v.astype(dtype) for k, v in stored.items()},
                      metadata={'format': 'pt'})
    with open(os.path.join(d, 'config.json'), 'w') as f:
        json.dump(c, f)
    if vocab is not None:
        with open(os.path.join(d, 'vocab.txt'), 'w') as f:
            f.write(''.join(s + '\n' for s in vocab))
    if tok_cfg is not None:
        with open(os.path.join(d, 'tokenizer_config.json'), 'w') as f:
            json.dump(tok_cfg, f)
    return d, W


def convert(d, out=None):
    out = out or d + '.txl'
    p = subprocess.run([TXL, 'convert', '--hf', d, '-o', out],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr, out


# ---- a minimal GGUF reader --------------------------------------------------

def read_gguf(path):
    raw = open(path, 'rb').read()
    assert raw[:4] == b'GGUF', 'not a GGUF file'
    pos = [4]

    def take(fmt):
        v = struct.unpack_from('<' + fmt, raw, pos[0])
        pos[0] += struct.calcsize('<' + fmt)
        return v[0]

    def string():
        n = take('Q')
        s = raw[pos[0]:pos[0] + n]
        pos[0] += n
        return s

    scalar = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?',
              10: 'Q', 11: 'q', 12: 'd'}

    def value(t):
        if t in scalar:
            return take(scalar[t])
        if t == 8:
            return string()
        if t == 9:
            et, n = take('I'), take('Q')
            return [value(et) for _ in range(n)]
        raise ValueError('bad type %d' % t)

    version = take('I')
    assert version == 3
    n_t, n_kv = take('Q'), take('Q')
    kv = {}
    for _ in range(n_kv):
        k = string().decode()
        kv[k] = value(take('I'))
    infos = []
    for _ in range(n_t):
        name = string().decode()
        nd = take('I')
        ne = [take('Q') for _ in range(nd)]
        typ, off = take('I'), take('Q')
        infos.append((name, ne, typ, off))
    align = kv.get('general.alignment', 32)
    base = (pos[0] + align - 1) // align * align
    tensors = {}
    for name, ne, typ, off in infos:
        assert typ == 0, '%s is not F32' % name
        n = int(np.prod(ne))
        a = np.frombuffer(raw, np.float32, n, base + off)
        tensors[name] = a.reshape(list(reversed(ne)))
    return kv, tensors


# ---- cases ------------------------------------------------------------------

CASES = []


def case(f):
    CASES.append(f)
    return f


def refused(d, *needles):
    rc, err, out = convert(d)
    assert rc != 0, 'accepted, expected a refusal naming %r' % (needles,)
    assert rc == 1, 'exit %d (want 1): %s' % (rc, err)
    assert err.startswith('txl convert: '), err
    for n in needles:
        assert n in err, 'message does not mention %r: %s' % (n, err)
    assert not os.path.exists(out), 'output written despite the refusal'
    if os.environ.get('TXL_TEST_VERBOSE') == '1':
        print('  ' + err.strip())
    return err


def refused_config(name, c, *needles):
    """A checkpoint written with a valid config.json, then c put in its
    place: the converter refuses it, naming the needles."""
    d, _ = ckpt(name, config())
    with open(os.path.join(d, 'config.json'), 'w') as f:
        json.dump(c, f)
    refused(d, *needles)


def accepted(d):
    rc, err, out = convert(d)
    assert rc == 0, 'exit %d: %s' % (rc, err)
    assert open(out, 'rb').read(4) == b'GGUF'
    return out


def info(out):
    """`txl info` as a dict, or None while that command is not built."""
    p = subprocess.run([TXL, 'info', out], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)


@case
def valid_adaptive_with_vocab():
    c = config()
    vocab = ['<eos>', '<unk>'] + ['w%d' % i for i in range(2, 40)]
    d, W = ckpt('valid', c, vocab=vocab, tok_cfg={'lower_case': True})
    out = accepted(d)
    kv, T = read_gguf(out)
    assert kv['txl.n_token'] == 40 and kv['txl.n_layer'] == 2
    assert kv['txl.cutoffs'] == [10, 20]
    assert kv['txl.tie_projs'] == [False, True, True]
    assert kv['txl.clamp_len'] == 0, 'clamp_len -1 must become 0'
    assert kv['txl.tgt_len'] == 4 and kv['txl.mem_len'] == 8
    assert kv['txl.cluster_order'] == b'hf'
    assert kv['general.name'] == b'valid'
    assert kv['tokenizer.type'] == b'word'
    assert [s.decode() for s in kv['tokenizer.tokens']] == vocab
    assert kv['tokenizer.eos_id'] == 0 and kv['tokenizer.unk_id'] == 1
    assert kv['tokenizer.lower_case'] is True
    expect = {
        'emb.0.weight': 'transformer.word_emb.emb_layers.0.weight',
        'emb.2.weight': 'transformer.word_emb.emb_layers.2.weight',
        'emb_proj.1': 'transformer.word_emb.emb_projs.1',
        'out_proj.0': 'crit.out_projs.0',
        'out.2.bias': 'crit.out_layers.2.bias',
        'cluster.weight': 'crit.cluster_weight',
        'cluster.bias': 'crit.cluster_bias',
        'blk.1.r_w_bias': 'transformer.layers.1.dec_attn.r_w_bias',
        'blk.0.r_r_bias': 'transformer.layers.0.dec_attn.r_r_bias',
        'blk.1.attn_qkv.weight': 'transformer.layers.1.dec_attn.qkv_net.weight',
        'blk.0.attn_r.weight': 'transformer.layers.0.dec_attn.r_net.weight',
        'blk.0.attn_out.weight': 'transformer.layers.0.dec_attn.o_net.weight',
        'blk.1.attn_norm.bias': 'transformer.layers.1.dec_attn.layer_norm.bias',
        'blk.0.ffn_up.weight': 'transformer.layers.0.pos_ff.CoreNet.0.weight',
        'blk.0.ffn_down.bias': 'transformer.layers.0.pos_ff.CoreNet.3.bias',
        'blk.1.ffn_norm.weight': 'transformer.layers.1.pos_ff.layer_norm.weight',
    }
    for ours, hf in expect.items():
        assert np.array_equal(T[ours], W[hf]), ours
    # tied copies are not written; untied projection 0 is
    for k in range(3):
        assert 'out.%d.weight' % k not in T
    assert 'out_proj.1' not in T and 'out_proj.2' not in T
    assert 'r_w_bias' not in T
    # 3 clusters x (emb, emb_proj, out.bias) + out_proj.0 + 2 cluster
    # + 2 layers x 13
    assert len(T) == 9 + 1 + 2 + 2 * 13, sorted(T)
    i = info(out)
    if i is not None:
        assert i['n_layer'] == 2 and i['tokenizer'] == 'word', i


@case
def div_val_1_projected_shared_r_f16_old_keys():
    # old key names (n_token, tie_weight), no tgt_len, untied output layer
    c = config(div_val=1, d_embed=12, untie_r=False, tie_word_embeddings=None,
               tie_weight=False, vocab_size=None, n_token=40, tgt_len=None,
               tie_projs=[True, False, True])
    d, W = ckpt('dv1', c, dtype=np.float16)
    out = accepted(d)
    kv, T = read_gguf(out)
    assert kv['txl.tgt_len'] == 128 and kv['txl.tie_weight'] is False
    assert kv['tokenizer.type'] == b'none'
    f16 = lambda a: a.astype(np.float16).astype(np.float32)  # noqa: E731
    assert np.array_equal(T['emb.0.weight'], f16(W['transformer.word_emb.emb_layers.0.weight']))
    assert np.array_equal(T['out.0.weight'], f16(W['crit.out_layers.0.weight']))
    assert np.array_equal(T['emb_proj.0'], f16(W['transformer.word_emb.emb_projs.0']))
    assert np.array_equal(T['out_proj.1'], f16(W['crit.out_projs.1']))
    assert 'out_proj.0' not in T and 'out_proj.2' not in T
    assert np.array_equal(T['r_w_bias'], f16(W['transformer.r_w_bias']))
    assert T['emb.0.weight'].shape == (40, 12)


@case
def plain_softmax_no_projection():
    # div_val 1 and d_embed == d_model: HF has no projections at all
    c = config(div_val=1, cutoffs=[], tie_projs=[False])
    d, W = ckpt('plain', c)
    kv, T = read_gguf(accepted(d))
    assert not any(n.startswith(('emb_proj', 'out_proj', 'cluster')) for n in T)
    assert kv['txl.cutoffs'] == []


@case
def tied_stored_on_output_side_only():
    c = config()
    d, W = ckpt('outside', c, store='out')
    kv, T = read_gguf(accepted(d))
    assert np.array_equal(T['emb.1.weight'], W['crit.out_layers.1.weight'])
    assert np.array_equal(T['emb_proj.2'], W['crit.out_projs.2'])


@case
def tied_stored_on_both_sides_equal():
    c = config()
    d, W = ckpt('both', c, store='both')
    kv, T = read_gguf(accepted(d))
    assert 'out.0.weight' not in T


@case
def tied_both_sides_different():
    c = config()

    def edit(S):
        S['crit.out_layers.1.weight'] = S['crit.out_layers.1.weight'] + 1
    d, _ = ckpt('bothdiff', c, store='both', edit=edit)
    refused(d, 'transformer.word_emb.emb_layers.1.weight',
            'crit.out_layers.1.weight')


@case
def missing_config_key():
    c = config()
    del c['n_layer']
    refused_config('nokey', c, 'n_layer')


@case
def non_integer_config_value():
    refused_config('float', config(d_inner=24.0), 'd_inner')


@case
def wrong_shape():
    name = 'transformer.layers.1.dec_attn.qkv_net.weight'

    def edit(S):
        S[name] = np.zeros((48, 15), np.float32)
    d, _ = ckpt('shape', config(), edit=edit)
    refused(d, name, '[48, 15]', '[48, 16]')


@case
def missing_tensor():
    name = 'transformer.layers.1.pos_ff.CoreNet.3.bias'
    d, _ = ckpt('missing', config(), edit=lambda S: S.pop(name))
    refused(d, name, 'missing')


@case
def missing_tied_pair():
    d, _ = ckpt('missingtie', config(),
                edit=lambda S: S.pop('transformer.word_emb.emb_projs.2'))
    refused(d, 'transformer.word_emb.emb_projs.2', 'crit.out_projs.2')


@case
def unexpected_tensor():
    def edit(S):
        S['transformer.layers.2.dec_attn.o_net.weight'] = np.zeros((2, 2), np.float32)
    d, _ = ckpt('extra', config(), edit=edit)
    refused(d, 'transformer.layers.2.dec_attn.o_net.weight')


@case
def inv_freq_buffer_accepted():
    def edit(S):
        S['transformer.pos_emb.inv_freq'] = (
            1 / 10000 ** (np.arange(0, 16, 2, dtype=np.float32) / 16)).astype(np.float32)
    d, _ = ckpt('invfreq', config(), edit=edit)
    accepted(d)


@case
def pickle_only():
    d, _ = ckpt('pickle', config())
    os.rename(os.path.join(d, 'model.safetensors'),
              os.path.join(d, 'pytorch_model.bin'))
    err = refused(d, 'pickle', 'pytorch_model.bin')
    assert 'safetensors' in err


@case
def vocab_wrong_line_count():
    d, _ = ckpt('vocab', config(), vocab=['<unk>'] + ['w%d' % i for i in range(38)])
    refused(d, 'vocab.txt', '39', '40')


@case
def vocab_repeated_symbol():
    d, _ = ckpt('vocabdup', config(), vocab=['a'] * 40)
    refused(d, 'vocab.txt', 'repeats')


@case
def attn_type_1():
    d, _ = ckpt('attn', config(attn_type=1))
    refused(d, 'attn_type')


@case
def sample_softmax_5():
    d, _ = ckpt('sample', config(sample_softmax=5))
    refused(d, 'sample_softmax')


@case
def ext_len_positive():
    d, _ = ckpt('extlen', config(ext_len=16))
    refused(d, 'ext_len')


@case
def config_invalid_cutoffs():
    refused_config('cut', config(cutoffs=[20, 10]), 'cutoffs')


@case
def corrupt_safetensors():
    d, _ = ckpt('corrupt', config())
    p = os.path.join(d, 'model.safetensors')
    raw = open(p, 'rb').read()
    open(p, 'wb').write(raw[:len(raw) // 2])
    refused(d, 'model.safetensors')


@case
def usage_errors():
    p = subprocess.run([TXL, 'convert', '-o', os.path.join(TMP, 'x.txl')],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and '--hf' in p.stderr, p.stderr
    p = subprocess.run([TXL, 'convert', '--hf', TMP],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and '-o' in p.stderr, p.stderr
    p = subprocess.run([TXL, 'convert', '--hf', os.path.join(TMP, 'nowhere'),
                        '-o', os.path.join(TMP, 'x.txl')],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and 'nowhere' in p.stderr, p.stderr


# ---- issue 12: nesting and non-finite weights ---------------------------------

def deep(n):
    return '[' * n + ']' * n


@case
def deep_config_json_refused():
    # json-glib recursed once per level: 100,000 levels crashed the converter
    d, _ = ckpt('deepcfg', config())
    with open(os.path.join(d, 'config.json'), 'w') as f:
        f.write('{"note": %s}' % deep(100000))
    refused(d, 'config.json', 'nested more than 64 levels')
    # the limit counts what nests, not brackets inside strings
    with open(os.path.join(d, 'config.json'), 'w') as f:
        c = config(note='[{' * 5000)
        c['nested'] = json.loads(deep(63))
        json.dump(c, f)
    os.remove(accepted(d))  # 64 levels, the object itself included
    with open(os.path.join(d, 'config.json'), 'w') as f:
        c['nested'] = json.loads(deep(64))
        json.dump(c, f)
    refused(d, 'config.json', 'nested more than 64 levels')


@case
def non_regular_json_files_refused():
    # g_file_get_contents read /dev/zero until memory ran out and waited on a
    # FIFO for a writer; both are now refused before anything is read
    vocab = ['<eos>', '<unk>'] + ['w%d' % i for i in range(2, 40)]
    d, _ = ckpt('nonreg', config(), vocab=vocab, tok_cfg={'lower_case': False})
    for name in ('config.json', 'tokenizer_config.json', 'vocab.txt'):
        keep = os.path.join(d, name + '.keep')
        os.rename(os.path.join(d, name), keep)
        os.symlink('/dev/zero', os.path.join(d, name))
        refused(d, name, 'not a regular file')
        os.remove(os.path.join(d, name))
        os.mkfifo(os.path.join(d, name))
        refused(d, name, 'not a regular file')
        os.remove(os.path.join(d, name))
        os.rename(keep, os.path.join(d, name))
    os.remove(accepted(d))


@case
def deep_tokenizer_config_refused():
    vocab = ['<eos>', '<unk>'] + ['w%d' % i for i in range(2, 40)]
    d, _ = ckpt('deeptok', config(), vocab=vocab, tok_cfg={'lower_case': False})
    with open(os.path.join(d, 'tokenizer_config.json'), 'w') as f:
        f.write('{"x": %s}' % deep(200000))
    refused(d, 'tokenizer_config.json', 'nested')


@case
def deep_safetensors_header_refused():
    d, _ = ckpt('deepst', config())
    hdr = ('{"__metadata__": {"x": "y"}, "t": %s}' % deep(100000)).encode()
    with open(os.path.join(d, 'model.safetensors'), 'wb') as f:
        f.write(struct.pack('<Q', len(hdr)) + hdr)
    refused(d, 'model.safetensors', 'nested more than 64 levels')


@case
def non_finite_weights_refused():
    name = 'transformer.layers.1.pos_ff.CoreNet.0.weight'
    for bad, word, dtype in ((np.inf, 'inf', np.float32), (np.nan, 'NaN', np.float32),
                             (-np.inf, '-inf', np.float16), (np.nan, 'NaN', np.float16)):
        def edit(S):
            S[name] = S[name].copy()
            S[name].reshape(-1)[9] = bad
        d, _ = ckpt('nonfinite-%s-%s' % (word, np.dtype(dtype).name), config(), edit=edit, dtype=dtype)
        refused(d, "tensor '%s' holds %s at index 9" % (name, word))


def main():
    passed = failed = 0
    try:
        for f in CASES:
            try:
                f()
                print('ok - %s' % f.__name__)
                passed += 1
            except Exception:
                print('FAIL - %s' % f.__name__)
                traceback.print_exc(file=sys.stdout)
                failed += 1
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
