/**
 * Response shapes of vLLM, SGLang, TGI and llama.cpp, built from their documented examples
 * and tests (docs/notes/server-shapes.md cites each source), read by the HTTP backend's
 * adapters: the right numbers out of a good answer, a loud error naming the kind and the
 * field out of a bad one.
 */
import { describe, expect, it } from 'vitest';
import { kindFromModels, serverRoots } from '../src/backends/http/backend.ts';
import { parseSamples, parseScore, parseTokenize, sampleCall, scoreCall, ServerContractError } from '../src/backends/http/servers.ts';

describe('vLLM', () => {
  // Captured vLLM v0.16.0 output (ggml-org/llama.cpp PR #15189): 8 prompt tokens, echo, logprobs 5, max_tokens 1;
  // the capture elides top_logprobs after the third position, filled in here (two entries each).
  const echo = {
    id: 'cmpl-8c16f81d43846721',
    object: 'text_completion',
    model: 'Intel/Qwen3-Coder-Next-int4-AutoRound',
    choices: [
      {
        index: 0,
        text: 'The step of boiling water is: 1',
        finish_reason: 'length',
        stop_reason: null,
        prompt_logprobs: null,
        logprobs: {
          text_offset: [0, 3, 8, 11, 19, 25, 28, 29, 30],
          token_logprobs: [
            null,
            -8.818763732910156,
            -1.552642822265625,
            -13.55989933013916,
            -2.0115487575531006,
            -2.2331151962280273,
            -8.53701114654541,
            -1.2870503664016724,
            -0.41059786081314087,
          ],
          tokens: ['The', ' step', ' of', ' boiling', ' water', ' is', ':', ' ', '1'],
          top_logprobs: [
            null,
            { ' step': -8.818763732910156, ' is': -0.7875133752822876 },
            { ' of': -1.552642822265625, ' in': -1.740142822265625 },
            { ' boiling': -13.55989933013916, ' the': -1.2 },
            { ' water': -2.0115487575531006 },
            { ' is': -2.2331151962280273, ' was': -1.9 },
            { ':': -8.53701114654541, ' to': -0.5 },
            { ' ': -1.2870503664016724 },
            { '1': -0.41059786081314087 },
          ],
        },
      },
    ],
    usage: { prompt_tokens: 8, total_tokens: 9, completion_tokens: 1 },
  };
  const ids = [785, 3019, 315, 49837, 3015, 374, 25, 220];

  it('echo + logprobs: one log-prob per prompt token, the first null, the generated token dropped; greedy per position', () => {
    const scored = parseScore('openai', echo, ids);
    expect(scored.logprobs).toEqual(echo.choices[0]!.logprobs.token_logprobs.slice(0, 8));
    expect(scored.greedy).toEqual([null, false, true, false, true, false, false, true]);
  });

  it('the request sends token ids, echo, logprobs and one generated token', () => {
    expect(scoreCall('openai', 'm', ids, 'x')).toEqual({
      path: '/v1/completions',
      body: { model: 'm', prompt: ids, echo: true, logprobs: 1, max_tokens: 1, temperature: 0, top_p: 1 },
    });
  });

  it('a prompt tokenised differently (more log-probs than our tokens + 1) is refused', () => {
    expect(() => parseScore('openai', echo, ids.slice(0, 6))).toThrow(/returned 9 log-probs for a 6-token prompt and one generated token/);
  });

  it('prompt_logprobs: entries keyed by token id, our ids pick the value, rank 1 is greedy', () => {
    // Reconstructed from vLLM's protocol types (docs/notes/server-shapes.md §1.5).
    const answer = {
      choices: [
        {
          index: 0,
          text: '!',
          logprobs: null,
          finish_reason: 'length',
          stop_reason: null,
          prompt_logprobs: [
            null,
            { 15043: { logprob: -9.21, rank: 412, decoded_token: 'Hello' }, 1576: { logprob: -2.05, rank: 1, decoded_token: 'The' } },
            { 3186: { logprob: -1.37, rank: 1, decoded_token: ' world' } },
          ],
        },
      ],
      usage: { prompt_tokens: 3, total_tokens: 4, completion_tokens: 1 },
    };
    expect(parseScore('vllm', answer, [1, 15043, 3186])).toEqual({ logprobs: [null, -9.21, -1.37], greedy: [null, false, true] });
    expect(() => parseScore('vllm', answer, [1, 999, 3186])).toThrow(/prompt_logprobs\[1\] has no entry for token 999/);
    expect(() => parseScore('vllm', { choices: [{ text: '!', prompt_logprobs: null }] }, [1, 2])).toThrow(ServerContractError);
  });

  it('sampling: choices in index order, stop_reason names the stop string, null stop_reason is EOS', () => {
    const answer = {
      choices: [
        { index: 1, text: 'ls -la', finish_reason: 'stop', stop_reason: '</bash>', logprobs: { token_logprobs: [-0.5, -0.25] } },
        { index: 0, text: 'done', finish_reason: 'stop', stop_reason: null, logprobs: null },
        { index: 2, text: 'abc', finish_reason: 'length', stop_reason: null, logprobs: null },
      ],
    };
    expect(parseSamples('vllm', answer, ['</bash>', '<submit/>'])).toEqual([
      { text: 'done', finishReason: 'eos', tokens: null, logprob: null },
      { text: 'ls -la', finishReason: 'stop', stop: '</bash>', tokens: 2, tokenLogprobs: [-0.5, -0.25], logprob: -0.75 },
      { text: 'abc', finishReason: 'length', tokens: null, logprob: null },
    ]);
  });

  it('/tokenize, /v1/models and URLs', () => {
    expect(parseTokenize('vllm', { count: 6, max_model_len: 4096, tokens: [1, 15043, 29892, 590, 1024, 338], token_strs: null })).toEqual([
      1, 15043, 29892, 590, 1024, 338,
    ]);
    expect(kindFromModels([{ id: 'meta-llama/Llama-3.1-8B', owned_by: 'vllm', max_model_len: 131072 }])).toBe('vllm');
    expect(serverRoots('http://a:8000/v1, http://b:8000/v1/')).toEqual(['http://a:8000', 'http://b:8000']);
  });
});

describe('SGLang', () => {
  // Reconstructed from SGLang's tokenizer manager (docs/notes/server-shapes.md §2.1).
  const answer = {
    text: ' Paris',
    output_ids: [12366],
    meta_info: {
      id: 'a1b2c3',
      finish_reason: { type: 'length', length: 1 },
      prompt_tokens: 6,
      input_token_logprobs: [
        [null, 128000, null],
        [-7.41, 791, null],
        [-6.02, 6864, null],
        [-0.31, 315, null],
        [-3.88, 9822, null],
        [-0.12, 374, null],
      ],
      output_token_logprobs: [[-0.45, 12366, null]],
      input_top_logprobs: [null, [[-2.1, 40, null]], [[-6.02, 6864, null]], [[-0.31, 315, null]], [[-1.0, 1, null]], [[-0.12, 374, null]]],
      completion_tokens: 1,
      cached_tokens: 0,
    },
  };
  const ids = [128000, 791, 6864, 315, 9822, 374];

  it('input_token_logprobs aligned on token ids, first null; top-1 decides greedy', () => {
    expect(parseScore('sglang', answer, ids)).toEqual({
      logprobs: [null, -7.41, -6.02, -0.31, -3.88, -0.12],
      greedy: [null, false, true, true, false, true],
    });
  });

  it('older servers that leave out the first token are aligned too; a different token is refused', () => {
    const older = {
      meta_info: {
        ...answer.meta_info,
        input_token_logprobs: answer.meta_info.input_token_logprobs.slice(1),
        input_top_logprobs: answer.meta_info.input_top_logprobs.slice(1),
      },
    };
    expect(parseScore('sglang', older, ids).logprobs).toEqual([null, -7.41, -6.02, -0.31, -3.88, -0.12]);
    expect(() => parseScore('sglang', answer, [128000, 791, 6864, 316, 9822, 374])).toThrow(
      /input_token_logprobs\[3\] is for token 315, the prompt has 316/,
    );
  });

  it('the request is /generate with input_ids, no new tokens, logprob_start_len 0; sampling reads the finish object', () => {
    expect(scoreCall('sglang', 'm', ids, 'x')).toMatchObject({
      path: '/generate',
      body: { input_ids: ids, return_logprob: true, logprob_start_len: 0, sampling_params: { max_new_tokens: 0 } },
    });
    const samples = parseSamples(
      'sglang',
      [
        {
          text: 'ls',
          meta_info: {
            finish_reason: { type: 'stop', matched: '</bash>' },
            completion_tokens: 2,
            output_token_logprobs: [
              [-0.5, 1, null],
              [-0.5, 2, null],
            ],
          },
        },
        { text: 'x', meta_info: { finish_reason: { type: 'stop', matched: 2 }, completion_tokens: 1 } },
      ],
      ['</bash>'],
    );
    expect(samples).toEqual([
      { text: 'ls', finishReason: 'stop', stop: '</bash>', ids: [1, 2], tokens: 2, tokenLogprobs: [-0.5, -0.5], logprob: -1 },
      { text: 'x', finishReason: 'eos', tokens: 1, logprob: null },
    ]);
  });
});

describe('TGI', () => {
  // TGI's integration-test snapshot (test_flash_llama.json): decoder_input_details, BOS first.
  const answer = {
    details: {
      best_of_sequences: null,
      finish_reason: 'length',
      generated_tokens: 10,
      prefill: [
        { id: 1, logprob: null, text: '<s>' },
        { id: 4321, logprob: -8.6875, text: 'Test' },
        { id: 2009, logprob: -11.546875, text: 'request' },
      ],
      seed: null,
      tokens: [{ id: 363, logprob: -1.5351562, special: false, text: ' for' }],
      top_tokens: null,
    },
    generated_text: ' for /api/v1/projects/1',
  };

  it('prefill log-probs, with the BOS TGI adds itself skipped', () => {
    expect(parseScore('tgi', answer, [4321, 2009])).toEqual({ logprobs: [-8.6875, -11.546875], greedy: [null, null], prepended: 1 });
    expect(parseScore('tgi', answer, [1, 4321, 2009]).logprobs).toEqual([null, -8.6875, -11.546875]);
  });

  it('an empty prefill (TGI ≥ 3 without --enable-prefill-logprobs) and a different tokenisation fail loudly', () => {
    expect(() => parseScore('tgi', { ...answer, details: { ...answer.details, prefill: [] } }, [4321, 2009])).toThrow(
      /--enable-prefill-logprobs/,
    );
    expect(() => parseScore('tgi', answer, [4321, 2010])).toThrow(/TGI tokenises the text itself/);
  });

  it('sampling: one request per sample, no top_p of 1, a kept stop sequence is cut off', () => {
    const call = sampleCall('tgi', 'm', {
      prompt: 'hi',
      promptIds: [1],
      n: 1,
      temperature: 0.7,
      topP: 1,
      maxTokens: 8,
      stop: ['</bash>'],
      seed: 3,
    });
    expect(call.body).toEqual({
      inputs: 'hi',
      parameters: { max_new_tokens: 8, do_sample: true, temperature: 0.7, stop: ['</bash>'], seed: 3, details: true },
    });
    expect(
      parseSamples(
        'tgi',
        {
          generated_text: 'ls\n</bash>',
          details: { finish_reason: 'stop_sequence', generated_tokens: 3, tokens: [{ logprob: -1 }, { logprob: -1 }, { logprob: -1 }] },
        },
        ['</bash>'],
      ),
    ).toEqual([{ text: 'ls\n', finishReason: 'stop', stop: '</bash>', tokens: 3, tokenLogprobs: [-1, -1, -1], logprob: -3 }]);
    expect(
      parseTokenize('tgi', [
        { id: 1, text: '', start: 0, stop: 0 },
        { id: 4321, text: 'Test', start: 0, stop: 4 },
      ]),
    ).toEqual([1, 4321]);
  });
});

describe('llama.cpp', () => {
  it('is recognised from /v1/models and refused for scoring: its /v1/completions does not echo', () => {
    expect(kindFromModels([{ id: 'model.gguf', owned_by: 'llamacpp' }])).toBe('llamacpp');
    expect(() => scoreCall('llamacpp', 'm', [1, 2], 'x')).toThrow(/llamacpp cannot score prompts/);
  });

  it("an answer in llama.cpp's chat-style logprobs shape, taken for an OpenAI server, is an ignored-echo error, not a number", () => {
    // Reconstructed from llama.cpp's to_json_oaicompat (docs/notes/server-shapes.md §4.2).
    const answer = {
      choices: [
        {
          text: ' Ge',
          index: 0,
          finish_reason: 'length',
          logprobs: { content: [{ id: 4244, token: ' Ge', bytes: [32, 71, 101], logprob: -3.12, top_logprobs: [] }] },
        },
      ],
    };
    expect(() => parseScore('openai', answer, [1, 2, 3])).toThrow(
      /server kind openai: the server ignored echo: it returned chat-shaped logprobs\.content for 1 generated token\(s\)/,
    );
    const ignored = {
      choices: [
        {
          text: ' Ge',
          index: 0,
          finish_reason: 'length',
          logprobs: { tokens: [' Ge'], token_logprobs: [-3.12], top_logprobs: [{ ' Ge': -3.12 }] },
        },
      ],
    };
    expect(() => parseScore('openai', ignored, [1, 2, 3])).toThrow(/the server ignored echo: 1 log-prob\(s\) for a 3-token prompt/);
  });

  it('/tokenize takes content and answers tokens; samples come from /completion, a stop kept only where stop_type says "word"', () => {
    expect(parseTokenize('llamacpp', { tokens: [1724, 338, 278] })).toEqual([1724, 338, 278]);
    const call = sampleCall('llamacpp', 'm', {
      prompt: 'x',
      promptIds: [1, 2],
      n: 3,
      temperature: 0.7,
      topP: 0.95,
      maxTokens: 9,
      stop: ['</bash>'],
      seed: 5,
    });
    expect(call.path).toBe('/completion');
    expect(call.body).toMatchObject({
      prompt: [1, 2],
      n: 3,
      n_predict: 9,
      seed: 5,
      top_k: 0,
      min_p: 0,
      samplers: ['temperature', 'top_k', 'top_p'],
    });
    const answer = [
      {
        index: 1,
        content: 'b',
        stop_type: 'eos',
        stopping_word: '',
        tokens_predicted: 2,
        completion_probabilities: [{ logprob: -1 }, { logprob: -2 }],
      },
      { index: 0, content: 'a', stop_type: 'word', stopping_word: '</bash>', tokens_predicted: 1 },
      { index: 2, content: 'c', stop_type: 'limit', stopping_word: '', tokens_predicted: 9 },
    ];
    expect(parseSamples('llamacpp', answer, ['</bash>'])).toEqual([
      { text: 'a', finishReason: 'stop', stop: '</bash>', tokens: 1, logprob: null },
      { text: 'b', finishReason: 'eos', tokens: 2, tokenLogprobs: [-1, -2], logprob: -3 },
      { text: 'c', finishReason: 'length', tokens: 9, logprob: null },
    ]);
    // An end of text answered as OpenAI's "stop" with no stop_reason is not taken for the one stop string.
    expect(parseSamples('openai', { choices: [{ text: 'x', index: 0, finish_reason: 'stop', logprobs: null }] }, ['</bash>'])).toEqual([
      { text: 'x', finishReason: 'eos', tokens: null, logprob: null },
    ]);
  });
});
