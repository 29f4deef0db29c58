// Base for every async native operation: a libuv worker that settles a Promise, carries a stable
// error code, can be cancelled through an atomic flag, and never lets a C++ exception escape.
#pragma once
#include <napi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace voxmill {

using CancelFlag = std::shared_ptr<std::atomic<bool>>;

class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, const char* resourceName);

  // Queues the work and returns `{ promise, abort }`; abort() sets the cancel flag and calls the abort hook.
  Napi::Object Start();

 protected:
  // The work, on a worker thread. Must not touch N-API. Report failures with Fail().
  virtual void Run() = 0;
  // Builds the resolved value, on the main thread.
  virtual Napi::Value Result(Napi::Env env) = 0;
  // Called on the main thread once the job settled either way (release references here), at most once; when
  // the environment is already gone it is not called, and ReleaseNative() runs instead.
  virtual void Settled() {}
  // Frees C++-only resources (model context, buffers) without touching N-API; used when the job
  // outlived its environment.
  virtual void ReleaseNative() {}

  // Work that blocks inside a library (an ONNX Runtime run) does not read the cancel flag: the hook reaches it.
  // Called on the main thread, possibly before the job starts or after it ended, so it must only touch state it
  // owns (capture shared pointers, never `this`). Set before Start().
  void SetAbortHook(std::function<void()> hook) { abortHook_ = std::move(hook); }

  void Fail(const std::string& code, const std::string& message);
  bool Cancelled() const { return cancel_->load(std::memory_order_relaxed); }
  const CancelFlag& cancelFlag() const { return cancel_; }

 private:
  void Execute() final;
  void OnOK() final;
  void OnError(const Napi::Error& error) final;
  void OnWorkComplete(Napi::Env env, napi_status status) final;
  void SettleOnce();

  Napi::Promise::Deferred deferred_;
  CancelFlag cancel_;
  std::function<void()> abortHook_;
  std::string code_ = "INTERNAL";
  bool settled_ = false;  // Settled() ran (main thread only)
};

// Makes an Error object carrying a `code` property.
Napi::Value MakeError(Napi::Env env, const std::string& code, const std::string& message);

// A job that failed before it started, in the shape every job has: `{ promise (rejected), abort }`.
Napi::Object RejectedJob(Napi::Env env, const char* code, const std::string& message);

}  // namespace voxmill
