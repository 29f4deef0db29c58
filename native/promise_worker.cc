#include "promise_worker.h"

#include <exception>
#include <new>
#include <utility>

namespace voxmill {

PromiseWorker::PromiseWorker(Napi::Env env, const char* resourceName)
    : Napi::AsyncWorker(env, resourceName),
      deferred_(Napi::Promise::Deferred::New(env)),
      cancel_(std::make_shared<std::atomic<bool>>(false)) {}

Napi::Object PromiseWorker::Start() {
  Napi::Env env = Env();
  Napi::Object job = Napi::Object::New(env);
  job.Set("promise", deferred_.Promise());
  CancelFlag flag = cancel_;
  std::function<void()> hook = abortHook_;
  job.Set("abort", Napi::Function::New(env, [flag, hook](const Napi::CallbackInfo& info) {
            flag->store(true);
            if (hook) hook();
            return info.Env().Undefined();
          }));
  Queue();
  return job;
}

void PromiseWorker::Fail(const std::string& code, const std::string& message) {
  code_ = code;
  SetError(message.empty() ? code : message);
}

void PromiseWorker::Execute() {
  try {
    Run();
  } catch (const std::bad_alloc&) {
    Fail("OUT_OF_MEMORY", "out of memory");
  } catch (const std::exception& e) {
    Fail("INTERNAL", std::string("internal error: ") + e.what());
  } catch (...) {
    Fail("INTERNAL", "internal error: unknown exception");
  }
}

void PromiseWorker::OnWorkComplete(Napi::Env env, napi_status status) {
  // When the job outlives its environment (a worker_thread terminated mid-transcription),
  // node-addon-api's completion opens a HandleScope that fails and throws before any of our code
  // runs; escaping here would std::terminate the whole process. There is nobody left to answer,
  // so the job ends quietly: its C++ resources are released, and the small wrapper is deliberately
  // leaked, because its destructor would hand N-API references back to an environment that is gone.
  try {
    Napi::AsyncWorker::OnWorkComplete(env, status);
  } catch (...) {
    try {
      ReleaseNative();
    } catch (...) {
    }
  }
}

void PromiseWorker::SettleOnce() {
  // OnOK() settles before resolving, and again in its catch when Resolve() itself throws (an environment
  // being torn down): the subclass's Settled() must still run exactly once.
  if (settled_) return;
  settled_ = true;
  Settled();
}

void PromiseWorker::OnOK() {
  Napi::Env env = Env();
  Napi::HandleScope scope(env);
  try {
    Napi::Value value = Result(env);
    SettleOnce();
    deferred_.Resolve(value);
  } catch (const Napi::Error& e) {
    SettleOnce();
    deferred_.Reject(e.Value());
  } catch (const std::exception& e) {
    SettleOnce();
    deferred_.Reject(MakeError(env, "INTERNAL", std::string("internal error: ") + e.what()));
  }
}

void PromiseWorker::OnError(const Napi::Error& error) {
  Napi::Env env = Env();
  Napi::HandleScope scope(env);
  SettleOnce();
  deferred_.Reject(MakeError(env, code_, error.Message()));
}

Napi::Value MakeError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error.Value();
}

Napi::Object RejectedJob(Napi::Env env, const char* code, const std::string& message) {
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(MakeError(env, code, message));
  Napi::Object job = Napi::Object::New(env);
  job.Set("promise", deferred.Promise());
  job.Set("abort", Napi::Function::New(env, [](const Napi::CallbackInfo& info) { return info.Env().Undefined(); }));
  return job;
}

}  // namespace voxmill
