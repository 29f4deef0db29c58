#include "onnx_session.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "addon_data.h"
#include "js_args.h"
#include "promise_worker.h"

namespace voxmill {
namespace {

constexpr size_t kMaxPathBytes = 4096;
// A model held in memory (a voice's graph edited for word timings): Piper's largest voices are about 120 MB.
constexpr size_t kMaxModelBytes = size_t{2} << 30;
// One run's inputs together: a batch of speaker windows is a few MB; far past anything voxmill sends.
constexpr size_t kMaxFeedBytes = size_t{1} << 30;
constexpr size_t kMaxRank = 8;
constexpr size_t kMaxTensors = 64;
constexpr size_t kMaxNameBytes = 1024;

Napi::Object TensorFactsToJs(Napi::Env env, const TensorFacts& facts) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", facts.name);
  out.Set("type", facts.type);
  Napi::Array shape = Napi::Array::New(env, facts.shape.size());
  for (size_t i = 0; i < facts.shape.size(); i++)
    shape.Set(static_cast<uint32_t>(i), static_cast<double>(facts.shape[i]));
  out.Set("shape", shape);
  return out;
}

Napi::Array FactsListToJs(Napi::Env env, const std::vector<TensorFacts>& list) {
  Napi::Array out = Napi::Array::New(env, list.size());
  for (size_t i = 0; i < list.size(); i++) out.Set(static_cast<uint32_t>(i), TensorFactsToJs(env, list[i]));
  return out;
}

// One feed: { name, type: 'float32' | 'int64', dims: number[], data: Float32Array | BigInt64Array }, copied (the
// caller's buffer may be transferred or collected while the run goes on).
NamedTensor ReadFeed(Napi::Env env, const Napi::Value& value, const std::string& name, size_t& totalBytes) {
  if (!value.IsObject()) ThrowInvalid(env, name, "an object { name, type, dims, data }", value);
  JsObject feed{value.As<Napi::Object>(), name};
  NamedTensor out;
  out.name = ReadString(env, feed, "name", 1, kMaxNameBytes);
  const std::string type = ReadString(env, feed, "type", 1, 16);
  Napi::Value data = feed.object.Get("data");
  napi_typedarray_type wanted;
  if (type == "float32") {
    out.tensor.type = TensorType::Float32;
    wanted = napi_float32_array;
  } else if (type == "int64") {
    out.tensor.type = TensorType::Int64;
    wanted = napi_bigint64_array;
  } else {
    ThrowInvalid(env, name + ".type", "'float32' or 'int64'", feed.object.Get("type"));
  }
  if (!data.IsTypedArray() || data.As<Napi::TypedArray>().TypedArrayType() != wanted) {
    ThrowInvalid(env, name + ".data", type == "int64" ? "a BigInt64Array" : "a Float32Array", data);
  }
  Napi::Value dims = feed.object.Get("dims");
  if (!dims.IsArray() || dims.As<Napi::Array>().Length() > kMaxRank) {
    ThrowInvalid(env, name + ".dims", "an array of at most " + std::to_string(kMaxRank) + " sizes", dims);
  }
  Napi::Array list = dims.As<Napi::Array>();
  size_t elements = 1;
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value dim = list.Get(i);
    const double d = dim.IsNumber() ? dim.As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 0 && d <= 2147483647.0 && d == static_cast<double>(static_cast<int64_t>(d)))) {
      ThrowInvalid(env, name + ".dims[" + std::to_string(i) + "]", "an integer in [0, 2147483647]", dim);
    }
    out.tensor.dims.push_back(static_cast<int64_t>(d));
    const auto size = static_cast<size_t>(d);
    if (size != 0 && elements > kMaxFeedBytes / size) {
      ThrowInvalid(env, name + ".dims", "a shape of at most " + std::to_string(kMaxFeedBytes) + " bytes", dims);
    }
    elements *= size;
  }
  Napi::TypedArray array = data.As<Napi::TypedArray>();
  if (array.ElementLength() != elements) {
    ThrowInvalid(env, name + ".data", std::to_string(elements) + " elements (the product of dims)", data);
  }
  const size_t bytes = array.ByteLength();
  totalBytes += bytes;
  if (totalBytes > kMaxFeedBytes) {
    ThrowInvalid(env, name, "inputs of at most " + std::to_string(kMaxFeedBytes) + " bytes in all", data);
  }
  out.tensor.bytes.resize(bytes);
  if (bytes > 0) {
    const auto* start = static_cast<const uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset();
    std::memcpy(out.tensor.bytes.data(), start, bytes);
  }
  return out;
}

Napi::Value TensorToJs(Napi::Env env, const NamedTensor& named) {
  const Tensor& tensor = named.tensor;
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", named.name);
  out.Set("type", tensor.type == TensorType::Int64 ? "int64" : "float32");
  Napi::Array dims = Napi::Array::New(env, tensor.dims.size());
  for (size_t i = 0; i < tensor.dims.size(); i++)
    dims.Set(static_cast<uint32_t>(i), static_cast<double>(tensor.dims[i]));
  out.Set("dims", dims);
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, tensor.bytes.size());
  if (!tensor.bytes.empty()) std::memcpy(buffer.Data(), tensor.bytes.data(), tensor.bytes.size());
  const size_t count = tensor.ElementCount();
  if (tensor.type == TensorType::Int64) {
    out.Set("data", Napi::TypedArrayOf<int64_t>::New(env, count, buffer, 0, napi_bigint64_array));
  } else {
    out.Set("data", Napi::Float32Array::New(env, count, buffer, 0));
  }
  return out;
}

class OnnxLoadWorker final : public PromiseWorker {
 public:
  OnnxLoadWorker(Napi::Env env, std::string runtimePath, std::string modelPath, std::vector<uint8_t> bytes,
                 SessionOptions options)
      : PromiseWorker(env, "voxmill.OnnxSession.load"),
        runtimePath_(std::move(runtimePath)),
        modelPath_(std::move(modelPath)),
        bytes_(std::move(bytes)),
        options_(options) {}

 protected:
  void Run() override {
    if (Cancelled()) return Fail("ABORTED", "the load was cancelled");
    try {
      core_ = OnnxSessionCore::Load(runtimePath_, modelPath_, bytes_, options_);
    } catch (const OnnxError& error) {
      Fail(error.code, error.what());
    }
    // The copy of an in-memory model is not needed once ONNX Runtime made its session.
    std::vector<uint8_t>().swap(bytes_);
  }

  Napi::Value Result(Napi::Env env) override { return OnnxSession::Wrap(env, std::move(core_)); }

  void ReleaseNative() override { core_.reset(); }

 private:
  std::string runtimePath_;
  std::string modelPath_;
  std::vector<uint8_t> bytes_;
  SessionOptions options_;
  std::shared_ptr<OnnxSessionCore> core_;
};

class OnnxRunWorker final : public PromiseWorker {
 public:
  OnnxRunWorker(Napi::Env env, Napi::Object owner, std::shared_ptr<OnnxSessionCore> core,
                std::vector<NamedTensor> feeds, std::vector<std::string> outputs)
      : PromiseWorker(env, "voxmill.OnnxSession.run"),
        core_(std::move(core)),
        feeds_(std::move(feeds)),
        wanted_(std::move(outputs)),
        cancel_(std::make_shared<RunCancel>()) {
    owner_ = Napi::Persistent(owner);
    std::shared_ptr<RunCancel> cancel = cancel_;
    SetAbortHook([cancel] { cancel->Cancel(); });
  }

 protected:
  void Run() override {
    try {
      results_ = core_->Run(feeds_, wanted_, *cancel_);
    } catch (const OnnxError& error) {
      Fail(error.code, error.what());
    }
    std::vector<NamedTensor>().swap(feeds_);
    // The session is not needed for the result: let go of it here, so that when the model was released during the
    // run, ONNX Runtime frees it on this thread (about 20 ms for a medium voice), not on the main thread.
    core_.reset();
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Array out = Napi::Array::New(env, results_.size());
    for (size_t i = 0; i < results_.size(); i++) out.Set(static_cast<uint32_t>(i), TensorToJs(env, results_[i]));
    return out;
  }

  void Settled() override { owner_.Reset(); }

  void ReleaseNative() override {
    core_.reset();
    results_.clear();
  }

 private:
  Napi::ObjectReference owner_;
  std::shared_ptr<OnnxSessionCore> core_;
  std::vector<NamedTensor> feeds_;
  std::vector<std::string> wanted_;
  std::shared_ptr<RunCancel> cancel_;
  std::vector<NamedTensor> results_;
};

// Lets go of a session on libuv's pool: freeing a medium voice's session takes ONNX Runtime about 20 ms, too long for
// the event loop. Runs still holding the session keep it until they end (and free it on their own thread then).
class OnnxReleaseWorker final : public PromiseWorker {
 public:
  OnnxReleaseWorker(Napi::Env env, std::shared_ptr<OnnxSessionCore> core)
      : PromiseWorker(env, "voxmill.OnnxSession.release"), core_(std::move(core)) {}

 protected:
  void Run() override { core_.reset(); }
  Napi::Value Result(Napi::Env env) override { return env.Undefined(); }
  void ReleaseNative() override { core_.reset(); }

 private:
  std::shared_ptr<OnnxSessionCore> core_;
};

}  // namespace

Napi::Function OnnxSession::Init(Napi::Env env) {
  return DefineClass(env, "OnnxSession",
                     {
                         StaticMethod<&OnnxSession::Load>("load"),
                         InstanceMethod<&OnnxSession::Info>("info"),
                         InstanceMethod<&OnnxSession::Run>("run"),
                         InstanceMethod<&OnnxSession::Release>("release"),
                     });
}

Napi::Object OnnxSession::Wrap(Napi::Env env, std::shared_ptr<OnnxSessionCore> core) {
  Napi::Function constructor = AddonData::From(env).onnxSession.Value();
  return constructor.New({Napi::External<std::shared_ptr<OnnxSessionCore>>::New(env, &core)});
}

OnnxSession::OnnxSession(const Napi::CallbackInfo& info) : Napi::ObjectWrap<OnnxSession>(info) {
  // Only Wrap() may construct: it passes the loaded model through an External.
  if (info.Length() != 1 || !info[0].IsExternal()) {
    ThrowCoded(info.Env(), "INVALID_ARGUMENT", "OnnxSession cannot be constructed directly; use OnnxSession.load()");
  }
  core_ = std::move(*info[0].As<Napi::External<std::shared_ptr<OnnxSessionCore>>>().Data());
}

Napi::Value OnnxSession::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PathOrBytes source = ReadPathOrBytesArg(env, info, 0, "source", kMaxPathBytes);
  JsObject options = ReadObjectArg(env, info, 1, "options");
  const std::string runtimePath = ReadString(env, options, "runtimePath", 1, kMaxPathBytes);
  SessionOptions sessionOptions;
  sessionOptions.intraOpThreads = static_cast<int>(ReadInteger(env, options, "intraOpThreads", 1, 1024));
  sessionOptions.memoryArena = ReadBoolean(env, options, "memoryArena");
  sessionOptions.optimizedCache = OptionalString(env, options, "optimizedCache", "", kMaxPathBytes);
  std::vector<uint8_t> bytes;
  std::string modelPath = source.path;
  if (source.path.empty()) {
    if (source.bytes.ByteLength() == 0 || source.bytes.ByteLength() > kMaxModelBytes) {
      ThrowInvalid(env, "source", "a Uint8Array of 1 to " + std::to_string(kMaxModelBytes) + " bytes", source.bytes);
    }
    // Copied: the caller's buffer may be transferred or collected while the load runs.
    bytes.assign(source.bytes.Data(), source.bytes.Data() + source.bytes.ByteLength());
    modelPath = ReadString(env, options, "name", 1, kMaxPathBytes);
  }
  auto* worker = new OnnxLoadWorker(env, runtimePath, modelPath, std::move(bytes), sessionOptions);
  return worker->Start();
}

Napi::Value OnnxSession::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!core_) ThrowCoded(env, "MODEL_RELEASED", "this ONNX session was released");
  Napi::Object out = Napi::Object::New(env);
  out.Set("inputs", FactsListToJs(env, core_->inputs()));
  out.Set("outputs", FactsListToJs(env, core_->outputs()));
  return out;
}

Napi::Value OnnxSession::Run(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!core_) return RejectedJob(env, "MODEL_RELEASED", "this ONNX session was released");
  Napi::Value feedsValue = info[0];
  if (!feedsValue.IsArray() || feedsValue.As<Napi::Array>().Length() > kMaxTensors) {
    ThrowInvalid(env, "feeds", "an array of at most " + std::to_string(kMaxTensors) + " inputs", feedsValue);
  }
  Napi::Array feedList = feedsValue.As<Napi::Array>();
  std::vector<NamedTensor> feeds;
  size_t totalBytes = 0;
  for (uint32_t i = 0; i < feedList.Length(); i++) {
    feeds.push_back(ReadFeed(env, feedList.Get(i), "feeds[" + std::to_string(i) + "]", totalBytes));
  }
  Napi::Value outputsValue = info[1];
  if (!outputsValue.IsArray() || outputsValue.As<Napi::Array>().Length() > kMaxTensors) {
    ThrowInvalid(env, "outputs", "an array of at most " + std::to_string(kMaxTensors) + " output names", outputsValue);
  }
  Napi::Array outputList = outputsValue.As<Napi::Array>();
  std::vector<std::string> outputs;
  for (uint32_t i = 0; i < outputList.Length(); i++) {
    Napi::Value name = outputList.Get(i);
    if (!name.IsString()) ThrowInvalid(env, "outputs[" + std::to_string(i) + "]", "an output name", name);
    outputs.push_back(name.As<Napi::String>().Utf8Value());
    bool known = false;
    for (const TensorFacts& output : core_->outputs()) known = known || output.name == outputs.back();
    if (!known) ThrowInvalid(env, "outputs[" + std::to_string(i) + "]", "an output of this model", name);
  }
  auto* worker = new OnnxRunWorker(env, info.This().As<Napi::Object>(), core_, std::move(feeds), std::move(outputs));
  return worker->Start();
}

Napi::Value OnnxSession::Release(const Napi::CallbackInfo& info) {
  if (core_) (new OnnxReleaseWorker(info.Env(), std::move(core_)))->Start();
  core_.reset();
  return info.Env().Undefined();
}

Napi::Value OnnxRuntimeInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsUndefined()) {
    const std::string path = ReadStringArg(env, info, 0, "path", kMaxPathBytes);
    try {
      OnnxApi(path);
    } catch (const OnnxError& error) {
      ThrowCoded(env, error.code, error.what());
    }
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("path", OnnxLoadedPath());
  out.Set("version", OnnxLoadedVersion());
  return out;
}

}  // namespace voxmill
