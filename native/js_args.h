// Reading JS arguments in native code: one helper family, and the only way native/*.cc reads an argument. A
// value of the wrong type or out of range throws an Error with code INVALID_ARGUMENT whose message names the
// argument ("options.threads", "samples") and what was received.
//
// TypeScript validates every option and owns every default and range. The native side trusts nothing, but it
// checks only what it needs (types, and the bounds that keep memory and arithmetic safe) and never invents a
// default: what TypeScript always sends is read with a Read* helper (required); an Optional* helper is for an
// option that is truly optional in the native API, whose absence turns a feature off.
#pragma once
#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace voxmill {

[[noreturn]] void ThrowCoded(Napi::Env env, const std::string& code, const std::string& message);

// Throws INVALID_ARGUMENT: "<name> must be <expected>; received <value>".
[[noreturn]] void ThrowInvalid(Napi::Env env, const std::string& name, const std::string& expected,
                               const Napi::Value& received);

// A short description of a received value for error messages ("undefined", "3.5", "\"abc\"", "an array", ...).
std::string Describe(const Napi::Value& value);

// An options object and its name in error messages ("options", "options.vad").
struct JsObject {
  Napi::Object object;
  std::string name;
};

// --- positional arguments: info[index], called `name` in messages ----------------------------------------

JsObject ReadObjectArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name);
Napi::Float32Array ReadFloat32ArrayArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name);
// A non-empty string of at most maxBytes UTF-8 bytes.
std::string ReadStringArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name,
                          size_t maxBytes);
// A non-empty path string (at most maxPathBytes) or a Uint8Array: exactly one of `path` and `bytes` is set.
struct PathOrBytes {
  std::string path;
  Napi::Uint8Array bytes;
};
PathOrBytes ReadPathOrBytesArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name,
                               size_t maxPathBytes);
// A function, or an empty Napi::Function when undefined.
int64_t ReadIntegerArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name, double min,
                       double max);
Napi::Function OptionalFunctionArg(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* name);

// --- properties of an options object: options[key], called `<options.name>.<key>` in messages ---------------

// An integer in [min, max].
int64_t ReadInteger(Napi::Env env, const JsObject& options, const char* key, double min, double max);
// A finite number in [min, max].
double ReadNumber(Napi::Env env, const JsObject& options, const char* key, double min, double max);
bool ReadBoolean(Napi::Env env, const JsObject& options, const char* key);
// A string of at least minBytes and at most maxBytes UTF-8 bytes.
std::string ReadString(Napi::Env env, const JsObject& options, const char* key, size_t minBytes, size_t maxBytes);

// The same, or `absent` when options[key] is undefined. `absent` is the value that turns the feature off (or the
// library's own default, see vad.h), never a copy of a TypeScript default.
double OptionalNumber(Napi::Env env, const JsObject& options, const char* key, double absent, double min, double max);
int OptionalInteger(Napi::Env env, const JsObject& options, const char* key, int absent, int min, int max);
bool OptionalBoolean(Napi::Env env, const JsObject& options, const char* key, bool absent);
std::string OptionalString(Napi::Env env, const JsObject& options, const char* key, const std::string& absent,
                           size_t maxBytes);
// options[key] as an object, or nothing when undefined.
std::optional<JsObject> OptionalObject(Napi::Env env, const JsObject& options, const char* key);

// True when options[key] is present (not undefined).
bool Has(const JsObject& options, const char* key);

}  // namespace voxmill
