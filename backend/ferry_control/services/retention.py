"""The retention job for position and lag samples: samples younger than `position_sample_full_resolution_s` are
all kept; older ones keep one sample (the last) per series and `position_sample_bucket_s` bucket; samples older
than `position_sample_retention_s` are deleted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ferry_control.core.config import Settings
from ferry_control.repositories.samples import SampleRepository


@dataclass(frozen=True)
class RetentionReport:
    positions_downsampled: int
    positions_expired: int
    lag_downsampled: int
    lag_expired: int

    def deleted_by_table(self) -> dict[str, int]:
        return {
            "position_samples": self.positions_downsampled + self.positions_expired,
            "lag_samples": self.lag_downsampled + self.lag_expired,
        }


async def apply_retention(samples: SampleRepository, settings: Settings, now: datetime) -> RetentionReport:
    expire_before = now - timedelta(seconds=settings.collection.position_sample_retention_s)
    full_resolution_from = now - timedelta(seconds=settings.collection.position_sample_full_resolution_s)
    bucket_s = settings.collection.position_sample_bucket_s
    return RetentionReport(
        positions_downsampled=await samples.downsample_positions(full_resolution_from, expire_before, bucket_s),
        positions_expired=await samples.delete_positions_before(expire_before),
        lag_downsampled=await samples.downsample_lag(full_resolution_from, expire_before, bucket_s),
        lag_expired=await samples.delete_lag_before(expire_before),
    )
