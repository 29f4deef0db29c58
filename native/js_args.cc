#include "js_args.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "promise_worker.h"

namespace voxmill {
namespace {

constexpr size_t kDescribedStringChars = 64;

// The shortest form that reads back as the same double: "3.5", "1e+06", "nan", "-inf".
std::string FormatNumber(double d) {
  char text[32];
  for (int precision = 1; precision <= 17; precision++) {
    std::snprintf(text, sizeof(text), "%.*g", precision, d);
    if (std::isnan(d) || std::strtod(text, nullptr) == d) break;
  }
  return text;
}

std::string Property(const JsObject& options, const char* key) { return options.name + "." + key; }

std::string Range(double min, double max) { return "[" + FormatNumber(min) + ", " + FormatNumber(max) + "]"; }

}  // namespace

void ThrowCoded(Napi::Env env, const std::string& code, const std::string& message) {
  throw Napi::Error(env, MakeError(env, code, message));
}

void ThrowInvalid(Napi::Env env, const std::string& name, const std::string& expected, const Napi::Value& received) {
  ThrowCoded(env, "INVALID_ARGUMENT", name + " must be " + expected + "; received " + Describe(received));
}

std::string Describe(const Napi::Value& value) {
  if (value.IsUndefined()) return "undefined";
  if (value.IsNull()) return "null";
  if (value.IsNumber()) return FormatNumber(value.As<Napi::Number>().DoubleValue());
  if (value.IsString()) {
    const std::string text = value.As<Napi::String>().Utf8Value();
    return "\"" + (text.size() > kDescribedStringChars ? text.substr(0, kDescribedStringChars) + "..." : text) + "\"";
  }
  if (value.IsBoolean()) return value.As<Napi::Boolean>().Value() ? "true" : "false";
  if (value.IsArray()) return "an array";
  if (value.IsFunction()) return "a function";
  if (value.IsTypedArray()) return "a typed array";
  if (value.IsBuffer() || value.IsArrayBuffer()) return "a buffer";
  if (value.IsObject()) return "an object";
  if (value.IsSymbol()) return "a symbol";
  if (value.IsBigInt()) return "a bigint";
  return "a value of another type";
}

JsObject ReadObjectArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name) {
  Napi::Value value = info[index];
  if (!value.IsObject() || value.IsFunction()) ThrowInvalid(env, name, "an object", value);
  return {value.As<Napi::Object>(), name};
}

Napi::Float32Array ReadFloat32ArrayArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name) {
  Napi::Value value = info[index];
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    ThrowInvalid(env, name, "a Float32Array", value);
  }
  return value.As<Napi::Float32Array>();
}

std::string ReadStringArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name,
                          size_t maxBytes) {
  Napi::Value value = info[index];
  if (!value.IsString()) ThrowInvalid(env, name, "a non-empty string", value);
  std::string text = value.As<Napi::String>().Utf8Value();
  if (text.empty() || text.size() > maxBytes) {
    ThrowInvalid(env, name, "a non-empty string of at most " + std::to_string(maxBytes) + " bytes", value);
  }
  return text;
}

PathOrBytes ReadPathOrBytesArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name,
                               size_t maxPathBytes) {
  Napi::Value value = info[index];
  PathOrBytes out;
  if (value.IsTypedArray() && value.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
    out.bytes = value.As<Napi::Uint8Array>();
    return out;
  }
  if (value.IsString()) out.path = value.As<Napi::String>().Utf8Value();
  if (out.path.empty() || out.path.size() > maxPathBytes) {
    ThrowInvalid(env, name, "a Uint8Array or a path string of 1 to " + std::to_string(maxPathBytes) + " bytes", value);
  }
  return out;
}

Napi::Function OptionalFunctionArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name) {
  Napi::Value value = info[index];
  if (value.IsUndefined()) return Napi::Function();
  if (!value.IsFunction()) ThrowInvalid(env, name, "a function", value);
  return value.As<Napi::Function>();
}

double ReadNumber(Napi::Env env, const JsObject& options, const char* key, double min, double max) {
  Napi::Value value = options.object.Get(key);
  const bool number = value.IsNumber();
  const double d = number ? value.As<Napi::Number>().DoubleValue() : 0;
  if (!number || !std::isfinite(d) || d < min || d > max) {
    ThrowInvalid(env, Property(options, key), "a number in " + Range(min, max), value);
  }
  return d;
}

namespace {
int64_t IntegerIn(Napi::Env env, const std::string& name, Napi::Value value, double min, double max) {
  const bool number = value.IsNumber();
  const double d = number ? value.As<Napi::Number>().DoubleValue() : 0;
  // Checked before the cast: converting a NaN or out-of-range double to an integer is undefined behaviour.
  if (!number || !std::isfinite(d) || d != std::floor(d) || d < min || d > max) {
    ThrowInvalid(env, name, "an integer in " + Range(min, max), value);
  }
  return static_cast<int64_t>(d);
}
}  // namespace

int64_t ReadInteger(Napi::Env env, const JsObject& options, const char* key, double min, double max) {
  return IntegerIn(env, Property(options, key), options.object.Get(key), min, max);
}

int64_t ReadIntegerArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name, double min,
                       double max) {
  return IntegerIn(env, name, info[index], min, max);
}

bool ReadBoolean(Napi::Env env, const JsObject& options, const char* key) {
  Napi::Value value = options.object.Get(key);
  if (!value.IsBoolean()) ThrowInvalid(env, Property(options, key), "a boolean", value);
  return value.As<Napi::Boolean>().Value();
}

std::string ReadString(Napi::Env env, const JsObject& options, const char* key, size_t minBytes, size_t maxBytes) {
  Napi::Value value = options.object.Get(key);
  if (!value.IsString()) ThrowInvalid(env, Property(options, key), "a string", value);
  std::string text = value.As<Napi::String>().Utf8Value();
  if (text.size() < minBytes || text.size() > maxBytes) {
    ThrowInvalid(env, Property(options, key),
                 "a string of " + std::to_string(minBytes) + " to " + std::to_string(maxBytes) + " bytes", value);
  }
  return text;
}

double OptionalNumber(Napi::Env env, const JsObject& options, const char* key, double absent, double min, double max) {
  return Has(options, key) ? ReadNumber(env, options, key, min, max) : absent;
}

int OptionalInteger(Napi::Env env, const JsObject& options, const char* key, int absent, int min, int max) {
  return Has(options, key) ? static_cast<int>(ReadInteger(env, options, key, min, max)) : absent;
}

bool OptionalBoolean(Napi::Env env, const JsObject& options, const char* key, bool absent) {
  return Has(options, key) ? ReadBoolean(env, options, key) : absent;
}

std::string OptionalString(Napi::Env env, const JsObject& options, const char* key, const std::string& absent,
                           size_t maxBytes) {
  return Has(options, key) ? ReadString(env, options, key, 0, maxBytes) : absent;
}

std::optional<JsObject> OptionalObject(Napi::Env env, const JsObject& options, const char* key) {
  Napi::Value value = options.object.Get(key);
  if (value.IsUndefined()) return std::nullopt;
  if (!value.IsObject() || value.IsFunction()) ThrowInvalid(env, Property(options, key), "an object", value);
  return JsObject{value.As<Napi::Object>(), Property(options, key)};
}

bool Has(const JsObject& options, const char* key) { return !options.object.Get(key).IsUndefined(); }

}  // namespace voxmill
