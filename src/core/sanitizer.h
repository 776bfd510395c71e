/* GPT2C_SANITIZED: 1 in an AddressSanitizer build (GCC defines
 * __SANITIZE_ADDRESS__, clang answers __has_feature), else 0.  Code whose cost
 * or meaning changes under the sanitizer (a timing-based autotune, a test's
 * longest cases) asks this one place. */
#ifndef GPT2C_CORE_SANITIZER_H
#define GPT2C_CORE_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define GPT2C_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPT2C_SANITIZED 1
#endif
#endif
#ifndef GPT2C_SANITIZED
#define GPT2C_SANITIZED 0
#endif

#endif
