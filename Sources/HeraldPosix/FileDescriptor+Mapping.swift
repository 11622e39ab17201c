internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FileDescriptor {
    /// Allocates the file's pages for `offset..<offset + length` with fallocate(2), extending its size when that
    /// range passes its end, so stores through a shared mapping of them never fault for want of space: a full tmpfs
    /// fails here, with ENOSPC, instead of raising SIGBUS on a store.
    ///
    /// - Throws: ``SystemError``: ENOSPC, EOPNOTSUPP on a file system without fallocate, ENOSYS off Linux.
    public borrowing func allocate(offset: Int, length: Int) throws(SystemError) {
        let raw = rawValue
        _ = try completedSyscall("fallocate \(length) bytes at \(offset) of descriptor \(raw)") {
            herald_fallocate(raw, Int64(offset), Int64(length))
        }
    }

    /// Maps the file's first `length` bytes read-write and shared (mmap(2), `MAP_SHARED`): a store is a store into
    /// the file's pages, seen by pread(2) and kept when this process is killed, as a pwrite(2) is.
    ///
    /// A store past the file's end raises SIGBUS: map only what ``allocate(offset:length:)`` reserved.
    ///
    /// - Returns: the mapping, to be given back with ``unmap(_:)``.
    /// - Throws: ``SystemError``, e.g. ENOMEM, or ENODEV for a file that cannot be mapped.
    public borrowing func mapShared(length: Int) throws(SystemError) -> UnsafeMutableRawBufferPointer {
        precondition(length > 0, "mapShared(length:) needs a length")
        let raw = rawValue
        #if canImport(Glibc)
        // The page tables filled at once: a store then costs no fault (a 100-byte copy: 5 ns, not 25, a page's
        // fault spread over its records).
        let flags = MAP_SHARED | MAP_POPULATE
        #else
        let flags = MAP_SHARED
        #endif
        let address = try completedSyscall("mmap \(length) bytes of descriptor \(raw)") {
            // MAP_FAILED is ((void *)-1), which Swift does not import: -1 here.
            Int(bitPattern: mmap(nil, length, PROT_READ | PROT_WRITE, flags, raw, 0))
        }
        return UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: address), count: length)
    }

    /// Removes a mapping made by ``mapShared(length:)``; its stores stay in the file.
    public static func unmap(_ mapping: UnsafeMutableRawBufferPointer) {
        let result = munmap(mapping.baseAddress, mapping.count)
        precondition(result == 0, "munmap of \(mapping.count) bytes failed (\(Errno.current)): a bug in Herald")
    }
}
