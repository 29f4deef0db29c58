#include "phonemizer.h"

#include <string>
#include <utility>
#include <vector>

#include "js_args.h"
#include "phonemizer_core.h"
#include "promise_worker.h"

namespace voxmill {
namespace {

constexpr size_t kMaxPathBytes = 4096;
constexpr size_t kMaxVoiceBytes = 256;
constexpr uint32_t kMaxTexts = 100000;
// All texts of one call together: a long document is a few hundred kB; word timings send each word once more.
constexpr size_t kMaxTextBytes = size_t{16} << 20;

class PhonemizeWorker final : public PromiseWorker {
 public:
  PhonemizeWorker(Napi::Env env, std::string dataDir, std::string voice, std::vector<std::string> texts)
      : PromiseWorker(env, "voxmill.phonemize"),
        dataDir_(std::move(dataDir)),
        voice_(std::move(voice)),
        texts_(std::move(texts)) {}

 protected:
  void Run() override {
    try {
      clauses_ = Phonemize(dataDir_, voice_, texts_, cancelFlag().get());
    } catch (const PhonemizeError& error) {
      Fail(error.code, error.what());
    }
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Array out = Napi::Array::New(env, clauses_.size());
    for (size_t i = 0; i < clauses_.size(); i++) {
      Napi::Array text = Napi::Array::New(env, clauses_[i].size());
      for (size_t j = 0; j < clauses_[i].size(); j++) {
        Napi::Object clause = Napi::Object::New(env);
        clause.Set("phonemes", clauses_[i][j].phonemes);
        clause.Set("terminator", clauses_[i][j].terminator);
        text.Set(static_cast<uint32_t>(j), clause);
      }
      out.Set(static_cast<uint32_t>(i), text);
    }
    return out;
  }

 private:
  std::string dataDir_;
  std::string voice_;
  std::vector<std::string> texts_;
  std::vector<std::vector<Clause>> clauses_;
};

}  // namespace

Napi::Value PhonemizeJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string dataDir = ReadStringArg(env, info, 0, "dataDir", kMaxPathBytes);
  const std::string voice = ReadStringArg(env, info, 1, "voice", kMaxVoiceBytes);
  Napi::Value value = info[2];
  if (!value.IsArray() || value.As<Napi::Array>().Length() > kMaxTexts) {
    ThrowInvalid(env, "texts", "an array of at most " + std::to_string(kMaxTexts) + " strings", value);
  }
  Napi::Array list = value.As<Napi::Array>();
  std::vector<std::string> texts;
  texts.reserve(list.Length());
  size_t total = 0;
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value text = list.Get(i);
    const std::string name = "texts[" + std::to_string(i) + "]";
    if (!text.IsString()) ThrowInvalid(env, name, "a string", text);
    texts.push_back(text.As<Napi::String>().Utf8Value());
    // espeak-ng reads a text up to its first NUL: one inside would silently drop the rest.
    if (texts.back().find('\0') != std::string::npos) ThrowInvalid(env, name, "a string without NUL characters", text);
    total += texts.back().size();
    if (total > kMaxTextBytes) {
      ThrowInvalid(env, name, "texts of at most " + std::to_string(kMaxTextBytes) + " UTF-8 bytes in all", text);
    }
  }
  auto* worker = new PhonemizeWorker(env, dataDir, voice, std::move(texts));
  return worker->Start();
}

Napi::Value EspeakVersionJs(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), EspeakVersion()); }

}  // namespace voxmill
