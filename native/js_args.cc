#include "js_args.h"

#include <cmath>

#include "promise_worker.h"

namespace voxmill {

void ThrowCoded(Napi::Env env, const std::string& code, const std::string& message) {
  throw Napi::Error(env, MakeError(env, code, message));
}

std::string Describe(const Napi::Value& value) {
  if (value.IsUndefined()) return "undefined";
  if (value.IsNull()) return "null";
  if (value.IsNumber()) return std::to_string(value.As<Napi::Number>().DoubleValue());
  if (value.IsString()) return "\"" + value.As<Napi::String>().Utf8Value() + "\"";
  if (value.IsBoolean()) return value.As<Napi::Boolean>().Value() ? "true" : "false";
  return "a value of another type";
}

double ReadNumber(Napi::Env env, const Napi::Object& options, const char* key, double min, double max) {
  Napi::Value value = options.Get(key);
  const bool number = value.IsNumber();
  const double d = number ? value.As<Napi::Number>().DoubleValue() : 0;
  if (!number || !std::isfinite(d) || d < min || d > max) {
    ThrowCoded(env, "INVALID_ARGUMENT",
               std::string("options.") + key + " must be a number in [" + std::to_string(min) + ", " +
                   std::to_string(max) + "]; received " + Describe(value));
  }
  return d;
}

int64_t ReadInteger(Napi::Env env, const Napi::Object& options, const char* key, double min, double max) {
  Napi::Value value = options.Get(key);
  const bool number = value.IsNumber();
  const double d = number ? value.As<Napi::Number>().DoubleValue() : 0;
  // Checked before the cast: converting a NaN or out-of-range double to an integer is undefined behaviour.
  if (!number || !std::isfinite(d) || d != std::floor(d) || d < min || d > max) {
    ThrowCoded(env, "INVALID_ARGUMENT",
               std::string("options.") + key + " must be an integer in [" + std::to_string(static_cast<int64_t>(min)) +
                   ", " + std::to_string(static_cast<int64_t>(max)) + "]; received " + Describe(value));
  }
  return static_cast<int64_t>(d);
}

double OptionalNumber(Napi::Env env, const Napi::Object& options, const char* key, double absent, double min,
                      double max) {
  return Has(options, key) ? ReadNumber(env, options, key, min, max) : absent;
}

int OptionalInteger(Napi::Env env, const Napi::Object& options, const char* key, int absent, int min, int max) {
  return Has(options, key) ? static_cast<int>(ReadInteger(env, options, key, min, max)) : absent;
}

bool OptionalBoolean(Napi::Env env, const Napi::Object& options, const char* key, bool absent) {
  Napi::Value value = options.Get(key);
  if (value.IsUndefined()) return absent;
  if (!value.IsBoolean()) {
    ThrowCoded(env, "INVALID_ARGUMENT",
               std::string("options.") + key + " must be a boolean; received " + Describe(value));
  }
  return value.As<Napi::Boolean>().Value();
}

std::string OptionalString(Napi::Env env, const Napi::Object& options, const char* key, const std::string& absent,
                           size_t maxBytes) {
  Napi::Value value = options.Get(key);
  if (value.IsUndefined()) return absent;
  if (!value.IsString()) {
    ThrowCoded(env, "INVALID_ARGUMENT",
               std::string("options.") + key + " must be a string; received " + Describe(value));
  }
  std::string text = value.As<Napi::String>().Utf8Value();
  if (text.size() > maxBytes) {
    ThrowCoded(env, "INVALID_ARGUMENT",
               std::string("options.") + key + " is longer than " + std::to_string(maxBytes) + " bytes");
  }
  return text;
}

bool Has(const Napi::Object& options, const char* key) { return !options.Get(key).IsUndefined(); }

}  // namespace voxmill
