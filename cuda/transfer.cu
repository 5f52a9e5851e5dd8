/*
 * transfer.cu
 *	  Copies between the device and the caller's host memory: points and
 *	  queries up, trees and kNN results down.
 *
 * Design.  The caller's arrays are ordinary pageable memory, often freshly
 * allocated.  Registering it with cudaHostRegister for each call costs more
 * than the copy itself, and a plain cudaMemcpy goes through the driver's
 * single staging buffer on one thread.
 * Instead up to KDC_COPY_THREADS host threads (exec->threads) each own a
 * small pinned staging buffer and a non-blocking stream, both made once per
 * device of the process (and freed at exit), and take every nthreads-th piece of the copy: a thread moves a
 * piece between its buffer and the device while the other threads move
 * theirs between their buffers and the caller's memory, so the link and
 * the host's memory bandwidth are both kept busy, and page faults on fresh
 * memory are taken by several threads at once.  Because the streams do not
 * synchronize with the default stream, finished kNN results go down while
 * the next kernels run (knn.cu).  The threads start with every signal
 * blocked, so that a PostgreSQL backend's handlers only ever run on its own
 * thread.  Copies under KDC_STAGE_BYTES are plain cudaMemcpy.  A copy down
 * into fresh memory pays the kernel's page faults, which scale poorly, so
 * the build has their pages faulted in while the device works
 * (kdc_prefault_begin).
 */
#include <mutex>
#include <new>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <thread>
#include <vector>

#include "common.cuh"

/* Threads that copy results out, at most, and each one's pinned buffer. */
#define KDC_COPY_THREADS 16
#define KDC_STAGE_BYTES ((size_t) 4 << 20)
/* host buffers one kdc_prefault_begin takes, at most */
#define KDC_PREFAULT_BUFS 8
/* devices with stages of their own, at most (others share the last set) */
#define KDC_STAGE_DEVICES 16

/* A copy thread's pinned buffer and stream, made on first use. */
typedef struct KdcStage
{
	void	   *host;
	cudaStream_t stream;
} KdcStage;

/*
 * Per device: one caller thread drives a device at a time (kd_gpu_abi.h),
 * so callers on different devices never share a buffer.
 */
static KdcStage kdc_stages[KDC_STAGE_DEVICES][KDC_COPY_THREADS];
static std::mutex kdc_stage_lock;

/* Free every stage (at exit, before the CUDA runtime's own teardown). */
static void
stages_close(void)
{
	for (int d = 0; d < KDC_STAGE_DEVICES; d++)
		for (int t = 0; t < KDC_COPY_THREADS; t++)
			if (kdc_stages[d][t].host != NULL)
			{
				cudaSetDevice(d);
				cudaFreeHost(kdc_stages[d][t].host);
				cudaStreamDestroy(kdc_stages[d][t].stream);
				kdc_stages[d][t].host = NULL;
			}
}

/* The stages of device d. */
static KdcStage *
device_stages(int d)
{
	return kdc_stages[d < KDC_STAGE_DEVICES ? d : KDC_STAGE_DEVICES - 1];
}

/*
 * Make stage t of the current device (d) if it is not there yet: its
 * stream belongs to that device.
 */
static cudaError_t
stage_open(int d, int t)
{
	static bool registered = false;
	std::lock_guard<std::mutex> guard(kdc_stage_lock);
	KdcStage   *s = &device_stages(d)[t];
	cudaError_t e;

	if (s->host != NULL)
		return cudaSuccess;
	if (!registered)
		registered = atexit(stages_close) == 0;
	e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess)
		return e;
	e = cudaMallocHost(&s->host, KDC_STAGE_BYTES);
	if (e != cudaSuccess)
	{
		cudaStreamDestroy(s->stream);
		s->host = NULL;
	}
	return e;
}

/*
 * Start body(t) on a thread of its own for t = first .. last - 1, each
 * appended to threads, with every signal blocked, so that the caller's
 * signals stay off them; returns how many started (fewer where no more
 * threads can be had).
 */
template <typename Body>
static int
start_threads(std::vector<std::thread> &threads, int first, int last, Body body)
{
	sigset_t	all;
	sigset_t	old;
	int			started = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	try
	{
		for (int t = first; t < last; t++)
		{
			threads.emplace_back([body, t]() { body(t); });
			started++;
		}
	}
	catch (...)
	{
		/* no more threads */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return started;
}

/*
 * Run piece(t, p) for p = 0 .. npieces - 1 on up to nthreads threads, thread
 * t taking pieces t, t + nt, ...; the calling thread is thread 0.  Returns
 * the first error a piece reported.
 */
template <typename Piece>
static cudaError_t
run_pieces(int nthreads, int64_t npieces, Piece piece)
{
	std::vector<std::thread> threads;
	cudaError_t errs[KDC_COPY_THREADS];
	int			nt;
	int			started;
	int			device = 0;
	auto		share = [&](int t, int nt)
	{
		cudaError_t e;

		if ((e = cudaSetDevice(device)) != cudaSuccess || (e = stage_open(device, t)) != cudaSuccess)
			return e;
		for (int64_t p = t; p < npieces; p += nt)
			if ((e = piece(&device_stages(device)[t], p)) != cudaSuccess)
				return e;
		return cudaSuccess;
	};

	nt = nthreads < 1 ? 1 : (nthreads > KDC_COPY_THREADS ? KDC_COPY_THREADS : nthreads);
	if (npieces < nt)
		nt = (int) (npieces > 0 ? npieces : 1);
	/* every thread copies to or from the caller's current device */
	if (cudaGetDevice(&device) != cudaSuccess)
		device = kdc_device;
	started = start_threads(threads, 1, nt, [&](int t) { errs[t] = share(t, nt); });
	/* this thread takes its share and the shares of threads not started */
	errs[0] = share(0, nt);
	for (int t = started + 1; t < nt; t++)
		errs[t] = share(t, nt);
	for (auto &th : threads)
		th.join();
	for (int t = 0; t < nt; t++)
		if (errs[t] != cudaSuccess)
			return errs[t];
	return cudaSuccess;
}

/* Threads for a copy: the caller's CPU thread setting. */
static int
copy_threads(const KdExec *exec)
{
	return exec && exec->threads > 1 ? exec->threads : 1;
}

/*
 * Copy bytes from src to dst, one of them on the device and the other in
 * host memory, as kind says.
 */
static cudaError_t
staged_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
			const KdExec *exec)
{
	bool		down = kind == cudaMemcpyDeviceToHost;

	if (bytes < KDC_STAGE_BYTES)
		return cudaMemcpy(dst, src, bytes, kind);
	return run_pieces(copy_threads(exec), (int64_t) ((bytes + KDC_STAGE_BYTES - 1) / KDC_STAGE_BYTES),
					  [&](KdcStage *s, int64_t p)
					  {
						  size_t	off = (size_t) p * KDC_STAGE_BYTES;
						  size_t	len = bytes - off < KDC_STAGE_BYTES ? bytes - off : KDC_STAGE_BYTES;
						  cudaError_t e;

						  if (!down)
							  memcpy(s->host, (const char *) src + off, len);
						  e = cudaMemcpyAsync(down ? s->host : (char *) dst + off,
											  down ? (const char *) src + off : s->host,
											  len, kind, s->stream);
						  if (e == cudaSuccess)
							  e = cudaStreamSynchronize(s->stream);
						  if (e == cudaSuccess && down)
							  memcpy((char *) dst + off, s->host, len);
						  return e;
					  });
}

/* Threads faulting in pages (kdc_prefault_begin), until joined. */
struct KdcPrefault
{
	std::vector<std::thread> threads;
};

/*
 * Start faulting in the pages of host buffers that a copy from the device
 * will fill later (bufs[i], bytes[i] each, at most KDC_PREFAULT_BUFS), on
 * up to KDC_COPY_THREADS threads of their own, so that the faults overlap
 * the device's work instead of slowing the copy; kdc_prefault_end waits
 * for them.  A fresh page costs a
 * fault and a cleared page when first written, and the faults of one
 * process scale poorly over threads, so a copy into fresh memory runs at a
 * fraction of the link's speed.  Each page gets one
 * zero byte, which the copy overwrites.  With one CPU thread (as in the GPU
 * service), or no threads or memory to be had, the copy takes the faults
 * itself, and the result is NULL.
 */
KdcPrefault *
kdc_prefault_begin(void *const *bufs, const size_t *bytes, int nbufs,
				   const KdExec *exec)
{
	struct Span
	{
		char	   *p;
		size_t		len;
	}			spans[KDC_PREFAULT_BUFS];
	int			nt = copy_threads(exec);
	size_t		total = 0;
	KdcPrefault *pf;

	if (nt > KDC_COPY_THREADS)
		nt = KDC_COPY_THREADS;
	if (nbufs > KDC_PREFAULT_BUFS)
		nbufs = KDC_PREFAULT_BUFS;
	for (int i = 0; i < nbufs; i++)
	{
		spans[i].p = (char *) bufs[i];
		spans[i].len = bytes[i];
		total += bytes[i];
	}
	if (nt < 2 || total < KDC_STAGE_BYTES ||
		(pf = new(std::nothrow) KdcPrefault()) == NULL)
		return NULL;
	/* where fewer threads start, the copy faults in the pages nobody took */
	start_threads(pf->threads, 0, nt, [spans, nbufs, total, nt](int t)
	{
		/* this thread's share of the buffers laid end to end */
		size_t		lo = total / nt * t;
		size_t		hi = t == nt - 1 ? total : total / nt * (t + 1);
		size_t		base = 0;

		for (int i = 0; i < nbufs; base += spans[i].len, i++)
		{
			size_t		a = lo > base ? lo - base : 0;
			size_t		b = hi > base ? hi - base : 0;

			if (b > spans[i].len)
				b = spans[i].len;
			for (size_t off = a; off < b;
				 off += 4096 - ((uintptr_t) (spans[i].p + off) & 4095))
				*(volatile char *) (spans[i].p + off) = 0;
		}
	});
	return pf;
}

/* Wait for kdc_prefault_begin's threads and free pf (NULL: nothing to do). */
void
kdc_prefault_end(KdcPrefault *pf)
{
	if (pf == NULL)
		return;
	for (auto &th : pf->threads)
		th.join();
	delete pf;
}

/* Copy bytes from the device (d_src) to host memory (dst). */
cudaError_t
kdc_to_host(void *dst, const void *d_src, size_t bytes, const KdExec *exec)
{
	return staged_copy(dst, d_src, bytes, cudaMemcpyDeviceToHost, exec);
}

/* Copy bytes from host memory (src) to the device (d_dst). */
cudaError_t
kdc_to_device(void *d_dst, const void *src, size_t bytes, const KdExec *exec)
{
	return staged_copy(d_dst, src, bytes, cudaMemcpyHostToDevice, exec);
}

/*
 * Copy the results of nq queries (k slots each, the first cnt valid) from
 * d_res to out on the host; slots past cnt are left untouched.
 */
KdStatus
kdc_results_to_host(const KdNeighbor *d_res, int64_t nq, int k, int cnt,
					KdNeighbor *out, const KdExec *exec, KdError *err)
{
	cudaError_t e;

	if (nq <= 0 || cnt == 0)
		return KD_OK;
	if (cnt == k)
		e = kdc_to_host(out, d_res, sizeof(KdNeighbor) * k * nq, exec);
	else
		e = cudaMemcpy2D(out, sizeof(KdNeighbor) * k, d_res,
						 sizeof(KdNeighbor) * k, sizeof(KdNeighbor) * cnt,
						 nq, cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return kdc_cuda_error(err, e, "copying results to the host");
	return KD_OK;
}

/*
 * Copy the answers of nq queries with their neighbour counts to the host:
 * the results as kdc_results_to_host does, then d_count's nq counts into
 * count.  The flat and vantage-point searches end with it.
 */
KdStatus
kdc_answers_to_host(const KdNeighbor *d_res, const int32_t *d_count,
					int64_t nq, int k, int cnt, KdNeighbor *out,
					int32_t *count, const KdExec *exec, KdError *err)
{
	KdStatus	st = kdc_results_to_host(d_res, nq, k, cnt, out, exec, err);
	cudaError_t e;

	if (st != KD_OK || nq <= 0)
		return st;
	if ((e = cudaMemcpy(count, d_count, sizeof(int32_t) * nq,
						cudaMemcpyDeviceToHost)) != cudaSuccess)
		return kdc_cuda_error(err, e, "copying counts to the host");
	return KD_OK;
}
