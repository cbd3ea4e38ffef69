// A C interface to CTranslate2's Whisper model, so the Rust engine can load
// CTranslate2 at run time (dlopen) instead of linking it: a server without
// the library still starts. Built by scripts/models.sh against the headers
// and the shared library of the pinned CTranslate2 release (models.lock).
//
// The build passes MG_CT2_VERSION, the release of the headers it compiles
// against (python/ctranslate2/version.py of the same source tree), after
// checking that the library it links is that release too. The loader
// refuses a shim of another release or of another interface version.
//
// Every function catches C++ exceptions and reports them as text in `err`
// (NUL-terminated, at most `err_len` bytes); none throws across the boundary.

#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "ctranslate2/models/whisper.h"
#include "ctranslate2/utils.h"

#ifndef MG_CT2_VERSION
#error "build with -DMG_CT2_VERSION=\"<CTranslate2 release>\" (scripts/models.sh does)"
#endif

// The version of this C interface: raised whenever a signature here changes
// (crates/ct2/src/lib.rs checks it at load).
#define MG_CT2_ABI 2

using ctranslate2::StorageView;
using ctranslate2::models::Whisper;
using ctranslate2::models::WhisperOptions;

// Two pools over the same weights: the encoder's large matrix products gain
// from more threads, the decoder's small steps lose to their synchronisation.
struct mg_ct2 {
  std::unique_ptr<Whisper> encoder;
  std::unique_ptr<Whisper> pool;  // decoding: detection, generation, alignment
};

struct mg_ct2_enc {
  StorageView out;
  size_t frames;  // mel frames of the audio (not of the padded window)
};

// Decoding options (a subset of WhisperOptions).
struct mg_ct2_opts {
  size_t beam_size;
  float patience;
  float length_penalty;
  float temperature;      // used when sampling (beam_size == 1, num_hypotheses > 1)
  size_t num_hypotheses;  // best of this many samples
  size_t sampling_topk;
  size_t max_length;
  int suppress_blank;
  size_t max_initial_timestamp_index;
};

namespace {

void report(char* err, size_t len, const char* what) {
  if (err && len) {
    std::strncpy(err, what, len - 1);
    err[len - 1] = '\0';
  }
}

template <typename R, typename F>
R guard(char* err, size_t len, R fallback, F f) {
  try {
    return f();
  } catch (const std::exception& e) {
    report(err, len, e.what());
  } catch (...) {
    report(err, len, "unknown CTranslate2 error");
  }
  return fallback;
}

}  // namespace

extern "C" {

// Loads the model once; the encoder runs on `encoder_threads` threads, and
// `decoders` decodings (detection, generation, alignment) run at once, on
// `decoder_threads` threads each.
mg_ct2* mg_ct2_load(const char* path, size_t encoder_threads, size_t decoders,
                    size_t decoder_threads, const char* compute_type, char* err,
                    size_t err_len) {
  return guard(err, err_len, static_cast<mg_ct2*>(nullptr), [&]() -> mg_ct2* {
    ctranslate2::models::ModelLoader loader{std::string(path)};
    loader.device = ctranslate2::Device::CPU;
    loader.compute_type = ctranslate2::str_to_compute_type(compute_type);
    ctranslate2::set_num_threads(encoder_threads);
    auto model = loader.load().at(0);
    ctranslate2::ReplicaPoolConfig enc;
    enc.num_threads_per_replica = encoder_threads;
    ctranslate2::ReplicaPoolConfig dec;
    dec.num_threads_per_replica = decoder_threads;
    std::vector<std::shared_ptr<const ctranslate2::models::Model>> replicas(decoders, model);
    return new mg_ct2{std::make_unique<Whisper>(model, enc), std::make_unique<Whisper>(replicas, dec)};
  });
}

void mg_ct2_free(mg_ct2* m) { delete m; }

int mg_ct2_multilingual(const mg_ct2* m) { return m->pool->is_multilingual() ? 1 : 0; }

size_t mg_ct2_n_mels(const mg_ct2* m) { return m->pool->n_mels(); }

// Runs the encoder on one window of features, [n_mels, window] floats
// (whisper's window is 3000 frames); `frames` is how many of them hold audio.
// `aside` runs it on a free replica of the decoding pool (its threads)
// instead of the encoder's own: an encoding made while a decoding runs, on
// the core that decoding leaves idle, without taking the encoder's threads
// from it.
mg_ct2_enc* mg_ct2_encode(mg_ct2* m, const float* features, size_t n_mels, size_t window,
                          size_t frames, int aside, char* err, size_t err_len) {
  return guard(err, err_len, static_cast<mg_ct2_enc*>(nullptr), [&]() -> mg_ct2_enc* {
    std::vector<float> data(features, features + n_mels * window);
    StorageView input({1, static_cast<ctranslate2::dim_t>(n_mels),
                       static_cast<ctranslate2::dim_t>(window)},
                      data);
    Whisper& pool = aside ? *m->pool : *m->encoder;
    StorageView out = pool.encode(input, true).get();
    return new mg_ct2_enc{std::move(out), frames};
  });
}

void mg_ct2_enc_free(mg_ct2_enc* e) { delete e; }

// The most likely languages: writes up to `cap` language tokens ("<|en|>"),
// each in a 16-byte slot of `tokens`, with their probabilities; returns how
// many, or -1 on error.
long mg_ct2_detect(mg_ct2* m, const mg_ct2_enc* e, char* tokens, float* probs, size_t cap,
                   char* err, size_t err_len) {
  return guard(err, err_len, -1L, [&]() -> long {
    auto results = m->pool->detect_language(e->out);
    auto langs = results.at(0).get();
    size_t n = 0;
    for (; n < langs.size() && n < cap; ++n) {
      std::memset(tokens + 16 * n, 0, 16);
      std::strncpy(tokens + 16 * n, langs[n].first.c_str(), 15);
      probs[n] = langs[n].second;
    }
    return static_cast<long>(n);
  });
}

// Decodes after `prompt` (token ids). Writes the best hypothesis' ids
// (without the prompt) into `out` and returns how many (at most `cap`), or
// -1 on error; `score` is its cumulative log-probability divided by its
// length to the power of the length penalty, `no_speech` the probability of
// the no-speech token at the start.
long mg_ct2_generate(mg_ct2* m, const mg_ct2_enc* e, const size_t* prompt, size_t n_prompt,
                     const mg_ct2_opts* o, size_t* out, size_t cap, float* score,
                     float* no_speech, char* err, size_t err_len) {
  return guard(err, err_len, -1L, [&]() -> long {
    WhisperOptions opts;
    opts.beam_size = o->beam_size;
    opts.patience = o->patience;
    opts.length_penalty = o->length_penalty;
    opts.sampling_temperature = o->temperature;
    opts.num_hypotheses = o->num_hypotheses;
    opts.sampling_topk = o->sampling_topk;
    opts.max_length = o->max_length;
    opts.suppress_blank = o->suppress_blank != 0;
    opts.max_initial_timestamp_index = o->max_initial_timestamp_index;
    opts.return_scores = true;
    opts.return_no_speech_prob = true;
    std::vector<std::vector<size_t>> prompts{std::vector<size_t>(prompt, prompt + n_prompt)};
    auto results = m->pool->generate(e->out, prompts, opts);
    auto result = results.at(0).get();
    if (result.sequences_ids.empty())
      return 0L;
    const auto& ids = result.sequences_ids[0];
    size_t n = ids.size() < cap ? ids.size() : cap;
    std::copy(ids.begin(), ids.begin() + n, out);
    *score = result.scores.empty() ? 0.0f : result.scores[0];
    *no_speech = result.no_speech_prob;
    return static_cast<long>(n);
  });
}

// Aligns `text` (token ids) with the audio by cross-attention: writes the
// path as (text index, time index) pairs into `pairs` (2 per step, at most
// `pair_cap` steps) and the probability of each text token into `probs`
// (n_text + 1 slots: the end token last); returns the number of steps, or
// -1 on error.
long mg_ct2_align(mg_ct2* m, const mg_ct2_enc* e, const size_t* start, size_t n_start,
                  const size_t* text, size_t n_text, long median_width, long* pairs,
                  size_t pair_cap, float* probs, char* err, size_t err_len) {
  return guard(err, err_len, -1L, [&]() -> long {
    std::vector<size_t> start_sequence(start, start + n_start);
    std::vector<std::vector<size_t>> tokens{std::vector<size_t>(text, text + n_text)};
    std::vector<size_t> num_frames{e->frames};
    auto results = m->pool->align(e->out, start_sequence, tokens, num_frames, median_width);
    auto result = results.at(0).get();
    size_t n = result.alignments.size() < pair_cap ? result.alignments.size() : pair_cap;
    for (size_t i = 0; i < n; ++i) {
      pairs[2 * i] = static_cast<long>(result.alignments[i].first);
      pairs[2 * i + 1] = static_cast<long>(result.alignments[i].second);
    }
    for (size_t i = 0; i < result.text_token_probs.size() && i <= n_text; ++i)
      probs[i] = result.text_token_probs[i];
    return static_cast<long>(n);
  });
}

// The CTranslate2 release this shim was built against.
const char* mg_ct2_version() { return MG_CT2_VERSION; }

// The version of this C interface (MG_CT2_ABI).
int mg_ct2_abi() { return MG_CT2_ABI; }

}  // extern "C"
