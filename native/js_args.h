// Reading JS arguments in native code: one helper family that throws errors with a stable `code`
// (INVALID_ARGUMENT). TypeScript validates and defaults every option first; these checks are the last line
// of defence for callers that reach the addon directly, so they validate ranges but never invent defaults.
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

namespace voxmill {

[[noreturn]] void ThrowCoded(Napi::Env env, const std::string& code, const std::string& message);

// A short description of a received value for error messages ("undefined", "3.5", "\"abc\"", ...).
std::string Describe(const Napi::Value& value);

// options[key] as an integer in [min, max]; throws INVALID_ARGUMENT naming the key and the value otherwise.
int64_t ReadInteger(Napi::Env env, const Napi::Object& options, const char* key, double min, double max);

// options[key] as a finite number in [min, max]; throws INVALID_ARGUMENT otherwise.
double ReadNumber(Napi::Env env, const Napi::Object& options, const char* key, double min, double max);

// options[key] as a finite number in [min, max], or `absent` when it is undefined (the TypeScript layer omits
// options the caller left out, and whisper.cpp's own default then applies); throws INVALID_ARGUMENT otherwise.
double OptionalNumber(Napi::Env env, const Napi::Object& options, const char* key, double absent, double min,
                      double max);

// The same for an integer.
int OptionalInteger(Napi::Env env, const Napi::Object& options, const char* key, int absent, int min, int max);

// options[key] as a boolean, or `absent` when undefined; throws INVALID_ARGUMENT for another type.
bool OptionalBoolean(Napi::Env env, const Napi::Object& options, const char* key, bool absent);

// options[key] as a string, or `absent` when undefined; throws INVALID_ARGUMENT for another type or when
// longer than maxBytes.
std::string OptionalString(Napi::Env env, const Napi::Object& options, const char* key, const std::string& absent,
                           size_t maxBytes);

// True when options[key] is present (not undefined).
bool Has(const Napi::Object& options, const char* key);

}  // namespace voxmill
