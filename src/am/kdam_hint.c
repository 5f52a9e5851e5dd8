/*
 * kdam_hint.c
 *	  The hint of CREATE INDEX ... USING kdgpu on a geometry or geography
 *	  column when kdgpu_postgis, which holds their operator classes, is not
 *	  installed.
 *
 * PostgreSQL itself raises "data type geometry has no default operator
 * class for access method "kdgpu"", with a hint to name an operator class
 * that does not exist yet.  DefineIndex loads the access method's library
 * before it looks for operator classes, so kdgpu's emit_log_hook sees that
 * error and puts the hint that helps in its place: to install
 * kdgpu_postgis.  The error is recognised by its untranslated message,
 * the access method's name and the type's, so no other error changes.
 * PostgreSQL calls the hook only for messages it logs, which errors are
 * unless log_min_messages is above ERROR.
 */
#include "postgres.h"

#include "utils/elog.h"
#include "utils/memutils.h"

#include "am/kdam.h"

/* PostgreSQL's message for a type without a default operator class */
#define KDAM_NO_OPCLASS_MESSAGE \
	"data type %s has no default operator class for access method \"%s\""

static emit_log_hook_type prev_emit_log_hook = NULL;

/* Whether the formatted message names a PostGIS type and kdgpu. */
static bool
names_postgis_type(const char *message)
{
	static const char *const types[] = {"geometry", "geography"};

	for (int i = 0; i < lengthof(types); i++)
	{
		char	   *expected = psprintf(_(KDAM_NO_OPCLASS_MESSAGE), types[i], "kdgpu");
		bool		same = strcmp(message, expected) == 0;

		pfree(expected);
		if (same)
			return true;
	}
	return false;
}

/* emit_log_hook: hint at kdgpu_postgis for a PostGIS column's index. */
static void
kdam_opclass_hint(ErrorData *edata)
{
	if (edata->elevel == ERROR && edata->message_id != NULL &&
		edata->message != NULL &&
		strcmp(edata->message_id, KDAM_NO_OPCLASS_MESSAGE) == 0)
	{
		MemoryContext old = MemoryContextSwitchTo(ErrorContext);

		if (names_postgis_type(edata->message))
			edata->hint = pstrdup(_("Install kdgpu's PostGIS operator classes: CREATE EXTENSION kdgpu_postgis."));
		MemoryContextSwitchTo(old);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/* Install the hook (once, from _PG_init). */
void
kdam_opclass_hint_install(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = kdam_opclass_hint;
}
