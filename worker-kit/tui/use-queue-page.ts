import { useCallback, useRef, useState } from "react";
import type { StaffCasePage } from "../wire/staff.js";
import { LIST_LIMIT } from "../wire/support.js";
import type { ScreenProps } from "./screen.js";
import { currentCursor, type PageStack } from "./state/page-stack.js";
import { useRefresh, type Refresh } from "./use-refresh.js";

// The queue's current page, read again every few seconds (use-refresh.ts). A page is as many cases as the body has
// rows for; while a filter is on, the largest page the gateway gives, so the filter has more to search. An answer
// to an older request (the page turned meanwhile) is dropped.

export interface QueuePage extends Refresh {
  page: StaffCasePage | null;
}

export function useQueuePage(props: ScreenProps, stack: PageStack, rowsForCases: number, filtering: boolean, paused: boolean): QueuePage {
  const { staff, refreshMs, clearError, now } = props;
  const [page, setPage] = useState<StaffCasePage | null>(null);
  const latest = useRef(0);
  const limit = filtering ? LIST_LIMIT.max : Math.max(LIST_LIMIT.min, Math.min(LIST_LIMIT.max, rowsForCases));
  const cursor = currentCursor(stack);
  const load = useCallback(async () => {
    const mine = ++latest.current;
    const answer = await staff.listCases({ limit, cursor });
    if (mine === latest.current) setPage(answer);
  }, [staff, limit, cursor]);
  const refresh = useRefresh(load, { every: refreshMs, paused, clearError, now });
  return { page, ...refresh };
}
