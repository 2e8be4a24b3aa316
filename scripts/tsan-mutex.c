// Loaded into the test processes of scripts/tsan.sh (LD_PRELOAD): tells ThreadSanitizer about the
// slow paths of Swift's `Synchronization.Mutex` on Linux, which it cannot see.
//
// Why: `Mutex.withLock`'s fast path (an atomic compare-exchange) is inlined into our code and is
// instrumented, but under contention the lock is taken and given in libswiftSynchronization.so
// (`_MutexHandle._lockSlow`, `_unlockSlow`, `_tryLockSlow`: a spin, then FUTEX_LOCK_PI /
// FUTEX_UNLOCK_PI, where the kernel writes the lock word). That library is not instrumented, so TSan
// sees no acquire and no release there and reports "Swift access race" between two closures that
// both ran under the same lock. A four-thread counter under one Mutex (a few lines of Swift) shows
// it with swift 6.3.1: 3-4 reports, and the count is still exact.
//
// What this does: wraps those three functions (same symbols, found first because this library is
// preloaded) and calls __tsan_acquire(lock) after a slow lock, __tsan_release(lock) before a slow
// unlock. The lock word is the `_MutexHandle`'s address (swiftself), the same address the inlined
// fast path's atomics use, so both paths meet on one synchronisation object. Nothing else is
// hidden: an access outside the lock is still reported (checked with the same counter plus an
// unprotected write).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>

extern void __tsan_acquire(void *addr) __attribute__((weak));
extern void __tsan_release(void *addr) __attribute__((weak));

#define SWIFTCALL __attribute__((swiftcall))
#define SWIFTSELF __attribute__((swift_context))
#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"

typedef SWIFTCALL void (*LockSlow)(uint32_t, void *SWIFTSELF);
typedef SWIFTCALL void (*UnlockSlow)(void *SWIFTSELF);
typedef SWIFTCALL bool (*TryLockSlow)(void *SWIFTSELF);

SWIFTCALL void lockSlow(uint32_t owner, void *SWIFTSELF lock) __asm__(LOCK_SLOW);
SWIFTCALL void unlockSlow(void *SWIFTSELF lock) __asm__(UNLOCK_SLOW);
SWIFTCALL bool tryLockSlow(void *SWIFTSELF lock) __asm__(TRY_LOCK_SLOW);

SWIFTCALL void lockSlow(uint32_t owner, void *SWIFTSELF lock) {
    static LockSlow real;
    if (!real) real = (LockSlow)dlsym(RTLD_NEXT, LOCK_SLOW);
    real(owner, lock);
    if (__tsan_acquire) __tsan_acquire(lock);
}

SWIFTCALL void unlockSlow(void *SWIFTSELF lock) {
    static UnlockSlow real;
    if (!real) real = (UnlockSlow)dlsym(RTLD_NEXT, UNLOCK_SLOW);
    if (__tsan_release) __tsan_release(lock);
    real(lock);
}

SWIFTCALL bool tryLockSlow(void *SWIFTSELF lock) {
    static TryLockSlow real;
    if (!real) real = (TryLockSlow)dlsym(RTLD_NEXT, TRY_LOCK_SLOW);
    bool taken = real(lock);
    if (taken && __tsan_acquire) __tsan_acquire(lock);
    return taken;
}
